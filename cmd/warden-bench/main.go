// Command warden-bench measures warden's uncontended lock+unlock against
// two baselines on the same Redis, in one run: two PINGs (the floor any
// lock+unlock pays) and the same two Lua scripts called with no engine.
// It prints the median of several runs and the ratios to warden.
//
//	go run ./cmd/warden-bench                 # starts a redis-server on a free loopback port
//	go run ./cmd/warden-bench -addr host:port # or uses the Redis at addr
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/bench"
)

func main() {
	addr := flag.String("addr", "", "Redis address; empty starts a throwaway redis-server on loopback")
	pairs := flag.Int("pairs", 20000, "lock+unlock pairs per run")
	runs := flag.Int("runs", 5, "runs; the median is reported")
	flag.Parse()
	if err := run(*addr, *pairs, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "warden-bench:", err)
		os.Exit(1)
	}
}

func run(addr string, pairs, runs int) error {
	if pairs < 1 || runs < 1 {
		return errors.New("-pairs and -runs must be at least 1")
	}
	if addr == "" {
		a, stop, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	c, err := client.New(rdb)
	if err != nil {
		return err
	}
	defer c.Close(ctx)

	results := make([]bench.Uncontended, 0, runs)
	for i := range runs {
		u, err := bench.RunUncontended(ctx, c, rdb, pairs)
		if err != nil {
			return err
		}
		fmt.Printf("run %d: warden %v, scripts %v, 2xPING %v per pair\n", i+1,
			u.Warden.Round(100*time.Nanosecond), u.Scripts.Round(100*time.Nanosecond), u.Ping.Round(100*time.Nanosecond))
		results = append(results, u)
	}
	median := func(f func(bench.Uncontended) float64) float64 {
		v := make([]float64, len(results))
		for i, r := range results {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	fmt.Printf("\nuncontended lock+unlock, 1 goroutine, %d pairs x %d runs, medians (Redis %s)\n", pairs, runs, addr)
	fmt.Printf("%-22s %12s %16s\n", "", "µs per pair", "speed vs warden")
	fmt.Printf("%-22s %12.1f %16s\n", "warden", median(func(u bench.Uncontended) float64 { return us(u.Warden) }), "1.00")
	fmt.Printf("%-22s %12.1f %16.2f\n", "bare scripts", median(func(u bench.Uncontended) float64 { return us(u.Scripts) }),
		1/median(bench.Uncontended.ScriptsRatio))
	fmt.Printf("%-22s %12.1f %16.2f\n", "2xPING (floor)", median(func(u bench.Uncontended) float64 { return us(u.Ping) }),
		1/median(bench.Uncontended.FloorRatio))
	fmt.Printf("floor/warden %.2f, scripts/warden %.2f\n", median(bench.Uncontended.FloorRatio), median(bench.Uncontended.ScriptsRatio))
	return nil
}

// startRedis starts a throwaway redis-server on a free loopback port, with
// persistence off, and returns its address and a function that stops it.
func startRedis() (string, func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New(`redis-server not found: run "make deps", or pass -addr`)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	probe := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer probe.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if probe.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on port %d did not answer", port)
		}
	}
}
