// Command warden-bench measures warden side by side with its peers on the
// same Redis, in one run: redsync v4, bsm/redislock, rueidislock (one key,
// KeyMajority 1), the textbook lock (SET NX PX and a compare-and-delete
// script), Redisson's bare RLock scripts driven by go-redis (a baseline:
// Redisson's wire work without any engine) and, where nobody waits, the
// 2xPING floor. Libraries alternate (the order rotates every run), runs
// repeat, and it prints the median of every number and its ratio to
// warden's, then writes an SVG chart and, with -md, a markdown table.
//
// Workloads (-only picks some):
//
//	a  uncontended lock+unlock, 1 goroutine
//	b  16 goroutines on 16 names, lock+unlock
//	c  8 goroutines on one name, 100µs critical section (spun, not slept)
//	d  10,000 watchdog-mode locks held: Redis commands and CPU per renewal period
//	e  10,000 waiters on one name: memory per waiter, wake-up latency
//	f  100,000 names touched once: memory before, after, after passivation
//	g  16 goroutines, lock+unlock of a random key's stripe: 16 stripes vs 1 lock (warden only)
//	h  16 goroutines, lock+unlock of 8 values: a group lock vs a MultiLock of 8 locks (warden only)
//
// It lives in the benchmark's own module (the repository's bench
// directory), so that the module users import does not require the peers.
// Usage, from the repository's root:
//
//	go -C bench run ./cmd/warden-bench                  # starts a redis-server on a free loopback port
//	go -C bench run ./cmd/warden-bench -addr host:port  # or uses the Redis at addr
//	go -C bench run ./cmd/warden-bench -only a,c -runs 3 -duration 1s
//	go -C bench run ./cmd/warden-bench -pin -only a,b,c  # Redis on one CPU, the benchmark on the others (Linux)
//
// (go -C runs it in bench, so relative -svg and -md paths start there.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/bench/internal/bench"
	"github.com/warden-go/warden/internal/redisproc"
)

// config is the command line.
type config struct {
	addr     string
	runs     int
	duration time.Duration
	pairs    int
	only     string
	svg, md  string
	retry    time.Duration
	critical time.Duration
	locks    int
	watchdog time.Duration
	waiters  int
	names    int
	idle     time.Duration
	// isolate runs each library's workloads a, b and c in a process of
	// its own; child is what a child process runs (see isolate.go).
	isolate bool
	child   string
	// pin runs redis-server on one CPU and the benchmark on the others
	// (see pin.go).
	pin bool
}

// Fixed shapes of the workloads.
const (
	parallelGoroutines  = 16          // workload b
	contendedGoroutines = 8           // workload c
	waitersWindow       = time.Second // workload e's traffic window, at most -duration
	stripedGoroutines   = 16          // workload g
	stripes             = 16          // workload g
	groupGoroutines     = 16          // workload h
	lastWorkload        = 'h'
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "", "Redis address; empty starts a throwaway redis-server on loopback")
	flag.IntVar(&cfg.runs, "runs", 5, "runs; every number reported is the median over runs")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "how long each library runs in workloads a, b, c per run (and the renewal window of d, at least 3 periods)")
	flag.IntVar(&cfg.pairs, "pairs", 0, "if > 0, workload a runs this many pairs per library per run instead of -duration")
	flag.StringVar(&cfg.only, "only", "a,b,c,d,e,f,g,h", "comma list of the workloads to run (a..h)")
	flag.StringVar(&cfg.svg, "svg", "BENCHMARKS.svg", "where to write the SVG chart of throughput; empty: none")
	flag.StringVar(&cfg.md, "md", "", "where to write the markdown tables (for BENCHMARKS.md); empty: none")
	flag.DurationVar(&cfg.retry, "retry", time.Millisecond, "retry delay of the peers' and the textbook lock's blocking waits")
	flag.DurationVar(&cfg.critical, "critical", 100*time.Microsecond, "critical section of workload c (spun on the clock)")
	flag.IntVar(&cfg.locks, "locks", 10000, "locks held in workload d")
	flag.DurationVar(&cfg.watchdog, "watchdog", 3*time.Second, "watchdog timeout of workload d (renewal period: a third)")
	flag.IntVar(&cfg.waiters, "waiters", 10000, "waiters in workload e")
	flag.IntVar(&cfg.names, "names", 100000, "names touched in workload f")
	flag.DurationVar(&cfg.idle, "idle", 20*time.Second, "idle timeout (passivation) of workload f's client")
	flag.BoolVar(&cfg.isolate, "isolate", false, "run each library's workloads a, b and c in a process of its own (this command run again with -child)")
	flag.BoolVar(&cfg.pin, "pin", false, "run redis-server on the last CPU and this benchmark (and its -isolate children) on the others; Linux, with the throwaway server or a local one")
	flag.StringVar(&cfg.child, "child", "", "internal: run one workload of one library and print its result as JSON (-isolate)")
	flag.Parse()
	if cfg.child != "" {
		if err := child(context.Background(), cfg, cfg.child, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "warden-bench -child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "warden-bench:", err)
		os.Exit(1)
	}
}

// workloads parses -only.
func workloads(only string) (string, error) {
	var ws []byte
	for f := range strings.SplitSeq(only, ",") {
		f = strings.TrimSpace(f)
		if len(f) != 1 || f[0] < 'a' || f[0] > lastWorkload {
			return "", fmt.Errorf("-only: %q is not a workload (a..%c)", f, lastWorkload)
		}
		if !slices.Contains(ws, f[0]) {
			ws = append(ws, f[0])
		}
	}
	slices.Sort(ws)
	return string(ws), nil
}

func (cfg config) validate() (string, error) {
	ws, err := workloads(cfg.only)
	switch {
	case err != nil:
		return "", err
	case cfg.runs < 1:
		return "", errors.New("-runs must be at least 1")
	case cfg.duration <= 0:
		return "", errors.New("-duration must be positive")
	case cfg.pairs < 0:
		return "", errors.New("-pairs must not be negative")
	case cfg.retry <= 0:
		return "", errors.New("-retry must be positive")
	case cfg.critical < 0:
		return "", errors.New("-critical must not be negative")
	case cfg.locks < 1 || cfg.waiters < 1 || cfg.names < 1:
		return "", errors.New("-locks, -waiters and -names must be at least 1")
	case cfg.watchdog < 30*time.Millisecond:
		return "", errors.New("-watchdog must be at least 30ms")
	case cfg.idle <= 0:
		return "", errors.New("-idle must be positive")
	case cfg.pin && !pinSupported:
		return "", fmt.Errorf("-pin: CPU affinity is set on Linux only, not on %s", runtime.GOOS)
	case cfg.pin && cfg.addr != "" && !onLoopback(cfg.addr):
		return "", fmt.Errorf("-pin: %s is not on this machine's loopback: -pin moves the Redis process itself", cfg.addr)
	}
	return ws, nil
}

// onLoopback tells whether addr (host:port) names this machine's loopback.
func onLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		return true // an empty host dials this machine
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	ws, err := cfg.validate()
	if err != nil {
		return err
	}
	exit := newOnExit()
	defer exit.stop()
	if cfg.addr == "" {
		a, stop, err := startRedis()
		if err != nil {
			return err
		}
		exit.add(stop)
		cfg.addr = a
	}
	stats := redis.NewClient(&redis.Options{Addr: cfg.addr})
	defer stats.Close()
	if err := stats.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", cfg.addr, err)
	}
	var pinned string
	if cfg.pin {
		pid, err := redisProcessID(ctx, stats)
		if err != nil {
			return err
		}
		p, err := pin(pid)
		if err != nil {
			return err
		}
		exit.add(p.undo)
		pinned = p.String()
	}
	m, err := readMachine(ctx, stats)
	if err != nil {
		return err
	}
	m.pinned = pinned
	contenders, err := bench.NewContenders(cfg.addr, cfg.retry)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range contenders {
			_ = c.Close(ctx)
		}
	}()
	fmt.Fprintf(out, "warden-bench: workloads %s, %d runs, %v per library per run, Redis %s\n", ws, cfg.runs, cfg.duration, cfg.addr)
	res := newResults()
	for r := range cfg.runs {
		if err := runOnce(ctx, cfg, ws, r, contenders, stats, res, out); err != nil {
			return err
		}
	}
	rep := report{cfg: cfg, workloads: ws, machine: m, contenders: contenders, res: res}
	fmt.Fprintln(out)
	rep.text(out)
	if cfg.svg != "" {
		if err := os.WriteFile(cfg.svg, rep.svg(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nchart written to %s\n", cfg.svg)
	}
	if cfg.md != "" {
		if err := os.WriteFile(cfg.md, rep.markdown(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "markdown written to %s\n", cfg.md)
	}
	if v := res.violations(); v > 0 {
		return fmt.Errorf("%d mutual-exclusion violations", v)
	}
	return nil
}

// runOnce runs every workload in ws once, rotating the contenders' order
// by the run number r.
func runOnce(ctx context.Context, cfg config, ws string, r int, contenders []*bench.Contender, stats *redis.Client, res *results, out io.Writer) error {
	order := slices.Clone(contenders)
	if len(order) > 0 {
		k := r % len(order)
		order = append(order[k:], order[:k]...)
	}
	tag := fmt.Sprintf("run %d/%d", r+1, cfg.runs)
	key := func(w byte, name string) string { return fmt.Sprintf("bench:%c:%d:%s", w, r, name) }
	for _, w := range []byte(ws) {
		switch w {
		case 'a', 'b':
			goroutines, d, pairs := throughputShape(cfg, w)
			for _, c := range order {
				if !c.Role.Uncontended() {
					continue
				}
				runtime.GC()
				var t bench.Throughput
				var err error
				if cfg.isolate {
					err = runChild(ctx, cfg, w, c.Name, key(w, c.Name), &t)
				} else {
					t, err = bench.RunThroughput(ctx, c, stats, key(w, c.Name), goroutines, d, pairs)
				}
				if err != nil {
					return fmt.Errorf("workload %c: %w", w, err)
				}
				res.throughput[w][c.Name] = append(res.throughput[w][c.Name], t)
				fmt.Fprintf(out, "%s %c %-16s %9.0f pairs/s  %.2f cmds/pair\n", tag, w, c.Name, t.PerSecond(), t.SentPerPair())
			}
		case 'c':
			for _, c := range order {
				if !c.Role.Contended() {
					continue
				}
				runtime.GC()
				var t bench.Contention
				var err error
				if cfg.isolate {
					err = runChild(ctx, cfg, w, c.Name, key(w, c.Name), &t)
				} else {
					t, err = bench.RunContention(ctx, c, stats, key(w, c.Name), contendedGoroutines, cfg.critical, cfg.duration)
				}
				if err != nil {
					return fmt.Errorf("workload c: %w", err)
				}
				res.contention[c.Name] = append(res.contention[c.Name], t)
				fmt.Fprintf(out, "%s c %-16s %9.0f acq/s  wait p99 %v  re-acquire %.0f%%  violations %d\n", tag, c.Name,
					t.PerSecond(), t.Wait.P99.Round(time.Microsecond), 100*t.ReacquireShare(), t.Violations)
			}
		case 'd':
			runtime.GC()
			periods := max(3, int(cfg.duration/(cfg.watchdog/3)))
			rn, err := bench.RunRenewal(ctx, cfg.addr, stats, key(w, bench.Warden), cfg.locks, cfg.watchdog, periods)
			if err != nil {
				return fmt.Errorf("workload d: %w", err)
			}
			res.renewal = append(res.renewal, rn)
			fmt.Fprintf(out, "%s d %-16s %9.1f cmds/period  %v CPU/period  aligned %v\n", tag, bench.Warden,
				rn.SentPerPeriod(), rn.CPUPerPeriod().Round(time.Microsecond), rn.Aligned)
			if c := find(contenders, bench.Redsync); c != nil {
				runtime.GC()
				x, err := bench.RunExtendRound(ctx, c, stats, key(w, c.Name), cfg.locks, cfg.watchdog)
				if err != nil {
					return fmt.Errorf("workload d: %w", err)
				}
				res.extend = append(res.extend, x)
				fmt.Fprintf(out, "%s d %-16s %9d cmds/round   %v CPU/round\n", tag, c.Name, x.Cost.Sent.Cmds, x.CPU.Round(time.Microsecond))
			}
		case 'e':
			runtime.GC()
			wt, err := bench.RunWaiters(ctx, cfg.addr, stats, key(w, bench.Warden), cfg.waiters, min(waitersWindow, cfg.duration))
			if err != nil {
				return fmt.Errorf("workload e: %w", err)
			}
			res.waiters = append(res.waiters, wt)
			fmt.Fprintf(out, "%s e %-16s %9.0f B/waiter (engine)  wake-up p50 %v  acquired %d/%d\n", tag, bench.Warden,
				wt.EnginePerWaiter(), wt.Handoff.P50.Round(time.Microsecond), wt.Acquired, wt.Waiters)
		case 'g':
			runtime.GC()
			p, err := bench.RunStriped(ctx, cfg.addr, stats, key(w, bench.Warden), stripedGoroutines, stripes, cfg.duration)
			if err != nil {
				return fmt.Errorf("workload g: %w", err)
			}
			res.striped = append(res.striped, p)
			fmt.Fprintf(out, "%s g %-16s %9.0f pairs/s on %d stripes, %9.0f on 1 lock: x%.2f\n", tag, bench.Warden,
				p.Kind.PerSecond(), stripes, p.Base.PerSecond(), p.Ratio())
		case 'h':
			runtime.GC()
			p, err := bench.RunGroup(ctx, cfg.addr, stats, key(w, bench.Warden), groupGoroutines, cfg.duration)
			if err != nil {
				return fmt.Errorf("workload h: %w", err)
			}
			res.group = append(res.group, p)
			fmt.Fprintf(out, "%s h %-16s %9.0f pairs/s with a group lock, %9.0f with a MultiLock: x%.2f\n", tag, bench.Warden,
				p.Kind.PerSecond(), p.Base.PerSecond(), p.Ratio())
		case 'f':
			runtime.GC()
			p, err := bench.RunPassivation(ctx, cfg.addr, key(w, bench.Warden), cfg.names, cfg.idle, 30*time.Second)
			if err != nil {
				return fmt.Errorf("workload f: %w", err)
			}
			res.passivation = append(res.passivation, p)
			fmt.Fprintf(out, "%s f %-16s heap %s -> %s -> %s  key actors %d -> %d\n", tag, bench.Warden,
				mib(p.Start.HeapAlloc), mib(p.Touched.HeapAlloc), mib(p.Passivated.HeapAlloc), p.Touched.KeyActors, p.Passivated.KeyActors)
		}
	}
	return nil
}

func find(cs []*bench.Contender, name string) *bench.Contender {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// startRedis starts a throwaway redis-server on a free loopback port, with
// persistence off, and returns its address and a function that stops it
// and removes its directory.
func startRedis() (string, func(), error) {
	dir, err := os.MkdirTemp("", "warden-bench-")
	if err != nil {
		return "", nil, err
	}
	p, err := redisproc.Start(dir, redisproc.Args(dir))
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("no -addr, so a throwaway server: %w", err)
	}
	return p.Addr(), func() { _ = p.Stop(); _ = os.RemoveAll(dir) }, nil
}
