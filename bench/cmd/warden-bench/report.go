package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/warden-go/warden/bench/internal/bench"
)

// report turns the results into tables: text for the terminal, markdown
// for BENCHMARKS.md, and the SVG chart.
type report struct {
	cfg        config
	workloads  string
	machine    machine
	contenders []*bench.Contender
	res        *results
}

// table is one workload's medians.
type table struct {
	title  string
	header []string
	rows   [][]string
	notes  []string
}

// preamble is what every output states before the tables.
func (r report) preamble() []string {
	lines := []string{
		r.machine.String(),
		fmt.Sprintf("%d runs, libraries alternating (order rotated each run); every number is the median over runs, "+
			"ratios are medians of per-run ratios (x/warden: above 1 is more than warden)", r.cfg.runs),
		"pools: " + bench.PoolDescription(),
		"commands: cmds = commands the library's client sent (go-redis hook, plus SUBSCRIBE/UNSUBSCRIBE from INFO); " +
			"calls = commands Redis executed (INFO commandstats deltas, calls inside scripts included)",
		"blocking waits:",
	}
	if r.cfg.isolate {
		lines = slices.Insert(lines, 2, "processes: in workloads a, b and c each library ran in a process of its own "+
			"(-isolate); client CPU is that process's")
	}
	for _, c := range r.contenders {
		if c.Role != bench.RoleFloor {
			lines = append(lines, fmt.Sprintf("  %-16s %s", c.Name, c.Waits))
		}
	}
	return lines
}

func (r report) tables() []table {
	var ts []table
	for _, w := range []byte(r.workloads) {
		switch w {
		case 'a', 'b':
			ts = append(ts, r.throughputTable(w))
		case 'c':
			ts = append(ts, r.contentionTable())
		case 'd':
			ts = append(ts, r.renewalTable())
		case 'e':
			ts = append(ts, r.waitersTable())
		case 'f':
			ts = append(ts, r.passivationTable())
		case 'g':
			ts = append(ts, r.pairedTable(fmt.Sprintf("(g) %d goroutines, lock+unlock of the stripe of a random key (of %s), "+
				"%v per configuration per run (total pairs/s)", stripedGoroutines, count(bench.StripedKeys), r.cfg.duration),
				fmt.Sprintf("StripedLock, %d stripes", stripes), "one lock (1 stripe)", r.res.striped))
		case 'h':
			ts = append(ts, r.pairedTable(fmt.Sprintf("(h) %d goroutines, each on its own %d values, lock+unlock, "+
				"%v per configuration per run (total pairs/s)", groupGoroutines, bench.GroupValues, r.cfg.duration),
				fmt.Sprintf("GroupLock, %d values", bench.GroupValues),
				fmt.Sprintf("MultiLock of %d locks", bench.GroupValues), r.res.group))
		}
	}
	return ts
}

// names lists the contenders that took part in a workload, warden first.
func (r report) names(has func(string) bool) []string {
	var out []string
	for _, c := range r.contenders {
		if has(c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

func (r report) throughputTable(w byte) table {
	runs := r.res.throughput[w]
	t := table{header: []string{"library", "pairs/s", "x/warden", "µs/pair", "cmds/pair", "calls/pair",
		"Redis CPU µs/pair", "in scripts", "client CPU µs/pair", "Redis-bound pairs/s"}}
	if w == 'a' {
		how := r.cfg.duration.String()
		if r.cfg.pairs > 0 {
			how = strconv.Itoa(r.cfg.pairs) + " pairs"
		}
		t.title = fmt.Sprintf("(a) uncontended lock+unlock, 1 goroutine, %s per library per run", how)
	} else {
		t.title = fmt.Sprintf("(b) %d goroutines on %d distinct names, lock+unlock, %v per library per run (total pairs/s)",
			parallelGoroutines, parallelGoroutines, r.cfg.duration)
	}
	warden := runs[bench.Warden]
	for _, name := range r.names(func(n string) bool { return len(runs[n]) > 0 }) {
		x := runs[name]
		rate := median(x, bench.Throughput.PerSecond)
		t.rows = append(t.rows, []string{name, count(rate),
			ratio(ratioMedian(x, warden, bench.Throughput.PerSecond)),
			fmt.Sprintf("%.1f", median(x, bench.Throughput.MicrosPerPair)),
			fmt.Sprintf("%.2f", median(x, bench.Throughput.SentPerPair)),
			fmt.Sprintf("%.2f", median(x, bench.Throughput.ServerPerPair)),
			fmt.Sprintf("%.1f", median(x, bench.Throughput.RedisCPUPerPair)),
			fmt.Sprintf("%.1f", median(x, bench.Throughput.ScriptsPerPair)),
			fmt.Sprintf("%.1f", median(x, bench.Throughput.ClientCPUPerPair)),
			count(median(x, func(t bench.Throughput) float64 {
				if us := t.RedisCPUPerPair(); us > 0 {
					return 1e6 / us
				}
				return 0
			})),
		})
	}
	t.notes = append(t.notes, "µs/pair: mean time of one lock+unlock as one goroutine sees it; "+
		"cmds/pair and calls/pair include each library's background work meanwhile (warden: renewals, pub/sub)",
		"Redis CPU: the redis-server process's used_cpu_user + used_cpu_sys (INFO cpu) per pair; in scripts: the time "+
			"Redis spent running Lua scripts (INFO commandstats usec of EVAL/EVALSHA, the commands they call included), "+
			"which Redis measures as elapsed time; client CPU: this process's (getrusage), the workload's loop included; "+
			"Redis-bound pairs/s = 1s / Redis CPU per pair: about the most Redis could serve of that library's pairs "+
			"at this load if the client cost nothing")
	if floor := runs[bench.Floor]; len(floor) > 0 && len(warden) > 0 {
		t.notes = append(t.notes, fmt.Sprintf("warden/floor: %.2f (warden reaches this share of the 2xPING floor's speed)",
			ratioMedian(warden, floor, bench.Throughput.PerSecond)))
	}
	t.notes = append(t.notes, baselineNotes(warden, runs, bench.Throughput.PerSecond)...)
	if n := batchNote(warden, func(t bench.Throughput) bench.Batches { return t.Cost.Batches }); n != "" {
		t.notes = append(t.notes, n)
	}
	return t
}

// batchNote states how many script calls warden's client sent per round
// trip (the median over runs of each figure), if warden ran: what the
// engine's automatic pipelining of concurrent script calls made of the
// workload.
func batchNote[T any](warden []T, batches func(T) bench.Batches) string {
	if len(warden) == 0 {
		return ""
	}
	m := func(f func(bench.Batches) float64) float64 {
		return median(warden, func(x T) float64 { return f(batches(x)) })
	}
	return fmt.Sprintf("warden's batches: %.2f script calls a round trip (mean), p50 %.0f, p99 %.0f, max %.0f; "+
		"%.1f%% of its script calls went in a round trip of more than one, the median call in one of %.0f (a go-redis hook on its client counts the "+
		"EVALSHAs of each single call and each pipeline: the engine pipelines the calls its key actors make at the same "+
		"time, and sends an unlock with the next local waiter's acquire as one pipeline of two)",
		m(bench.Batches.Mean),
		m(func(b bench.Batches) float64 { return float64(b.Percentile(0.50)) }),
		m(func(b bench.Batches) float64 { return float64(b.Percentile(0.99)) }),
		m(func(b bench.Batches) float64 { return float64(b.Max()) }),
		100*m(bench.Batches.PipelinedShare),
		m(func(b bench.Batches) float64 { return float64(b.CallPercentile(0.50)) }))
}

// baselineNotes states warden's speed over each no-engine baseline's that
// ran beside it: Redisson's own wire work (redisson-bare) and warden's
// (warden-bare).
func baselineNotes[T any](warden []T, runs map[string][]T, f func(T) float64) []string {
	var notes []string
	for _, b := range []struct{ name, what string }{
		{bench.RedissonBare, "Redisson's RLock acquire and unlock scripts, no latch, by EVALSHA from go-redis, no engine, " +
			"no watchdog, polled when refused; below 1 is what warden's engine and guarantees cost over Redisson's own wire work"},
		{bench.WardenBare, "warden's own plain-lock scripts by package redisio from the caller's goroutine with its " +
			"automatic pipelining, waiters queued in order and handed the lock in the unlock's round trip, no engine; " +
			"below 1 is what the engine costs on top of its own wire work"},
	} {
		if base := runs[b.name]; len(warden) > 0 && len(base) > 0 {
			notes = append(notes, fmt.Sprintf("warden/%s: %.2f (%s: %s)", b.name, ratioMedian(warden, base, f), b.name, b.what))
		}
	}
	return notes
}

func (r report) contentionTable() table {
	runs := r.res.contention
	t := table{
		title: fmt.Sprintf("(c) %d goroutines on one name, %v critical section, %v per library per run",
			contendedGoroutines, r.cfg.critical, r.cfg.duration),
		header: []string{"library", "acq/s", "x/warden", "wait p50", "wait p99", "wait max", "re-acquire",
			"handoff p50", "handoff p99", "violations", "gave up", "cmds/acq", "calls/acq", "Redis CPU µs/acq"},
		notes: []string{
			fmt.Sprintf("the critical section spins on time.Now() for %v: time.Sleep(%v) would sleep about 1ms (timer granularity)",
				r.cfg.critical, r.cfg.critical),
			"wait: from the first Lock call of an acquisition to holding the lock (waits unfinished at the end count in max only); " +
				"re-acquire: share of acquisitions won by the goroutine that released just before; " +
				"handoff: from the previous holder's release (end of its critical section, before its Unlock) to another goroutine's Lock returning",
			"violations: acquisitions that found another holder in the critical section (atomic counter), total over all runs; " +
				"gave up: Lock calls the library abandoned after its retry budget (asked again), total over all runs",
		},
	}
	warden := runs[bench.Warden]
	for _, name := range r.names(func(n string) bool { return len(runs[n]) > 0 }) {
		x := runs[name]
		violations, gaveUp, unfinished := 0, 0, 0
		for _, c := range x {
			violations += c.Violations
			gaveUp += c.GaveUp
			unfinished += c.Unfinished
		}
		t.rows = append(t.rows, []string{name,
			count(median(x, bench.Contention.PerSecond)),
			ratio(ratioMedian(x, warden, bench.Contention.PerSecond)),
			durMedian(x, func(c bench.Contention) time.Duration { return c.Wait.P50 }),
			durMedian(x, func(c bench.Contention) time.Duration { return c.Wait.P99 }),
			durMedian(x, bench.Contention.MaxWait),
			fmt.Sprintf("%.0f%%", 100*median(x, bench.Contention.ReacquireShare)),
			durMedian(x, func(c bench.Contention) time.Duration { return c.Handoff.P50 }),
			durMedian(x, func(c bench.Contention) time.Duration { return c.Handoff.P99 }),
			strconv.Itoa(violations), strconv.Itoa(gaveUp),
			fmt.Sprintf("%.2f", median(x, bench.Contention.SentPerAcquisition)),
			fmt.Sprintf("%.2f", median(x, bench.Contention.ServerPerAcquisition)),
			fmt.Sprintf("%.1f", median(x, bench.Contention.RedisCPUPerAcquisition)),
		})
	}
	t.notes = append(t.notes, baselineNotes(warden, runs, bench.Contention.PerSecond)...)
	if fifo := runs[bench.FIFOFloor]; len(fifo) > 0 && len(warden) > 0 {
		t.notes = append(t.notes, fmt.Sprintf("warden/%s: %.2f (%s: a baseline, not a lock: waiters served in order, "+
			"one round trip and one wake-up of the next holder an acquisition, no engine; the least a FIFO handoff "+
			"confirmed in Redis costs in one process)", bench.FIFOFloor, ratioMedian(warden, fifo, bench.Contention.PerSecond), bench.FIFOFloor))
	}
	if n := batchNote(warden, func(c bench.Contention) bench.Batches { return c.Cost.Batches }); n != "" {
		t.notes = append(t.notes, n)
	}
	return t
}

func (r report) renewalTable() table {
	rn, ex := r.res.renewal, r.res.extend
	t := table{
		title: fmt.Sprintf("(d) %s locks held in watchdog mode by one warden client, watchdog %v (renewal period %v)",
			count(float64(r.cfg.locks)), r.cfg.watchdog, r.cfg.watchdog/3),
		header: []string{"who", "cmds/period", "cmds/100 locks", "x/warden", "round trips", "calls/period", "calls/100 locks",
			"client CPU/period", "Redis CPU/period"},
	}
	if len(rn) == 0 {
		return t
	}
	locks := float64(r.cfg.locks)
	sent := median(rn, bench.Renewal.SentPerPeriod)
	calls := median(rn, bench.Renewal.ServerPerPeriod)
	t.rows = append(t.rows, []string{"warden (renewer, measured)", count(sent), fmt.Sprintf("%.2f", 100*sent/locks), ratio(1),
		count(median(rn, bench.Renewal.TripsPerPeriod)),
		count(calls), fmt.Sprintf("%.2f", 100*calls/locks),
		durMedian(rn, bench.Renewal.CPUPerPeriod), durMedian(rn, bench.Renewal.RedisCPUPerPeriod)})
	if len(ex) > 0 {
		xs := median(ex, func(x bench.ExtendRound) float64 { return float64(x.Cost.Sent.Cmds) })
		xc := median(ex, func(x bench.ExtendRound) float64 { return float64(x.Cost.Server.Calls) })
		t.rows = append(t.rows, []string{"redsync Extend x1 per lock (measured round)", count(xs), fmt.Sprintf("%.2f", 100*xs/locks),
			ratio(xs / sent), count(median(ex, func(x bench.ExtendRound) float64 { return float64(x.Cost.Sent.Trips) })),
			count(xc), fmt.Sprintf("%.2f", 100*xc/locks),
			durMedian(ex, func(x bench.ExtendRound) time.Duration { return x.CPU }),
			durMedian(ex, func(x bench.ExtendRound) time.Duration { return x.Cost.Server.CPU })})
	}
	t.rows = append(t.rows, []string{"any peer (computed: 1 Extend/Refresh per lock)", count(locks), "100.00", ratio(locks / sent),
		count(locks), count(3 * locks), "300.00", "-", "-"})
	aligned := 0
	for _, x := range rn {
		aligned += btoi(x.Aligned)
	}
	t.notes = []string{
		fmt.Sprintf("warden: %d renewal periods per run, %d of %d runs aligned on renewal bursts (else a wall-clock window); "+
			"idle client CPU/period before taking the locks: %s; taking them all (%d goroutines): %s",
			rn[0].Periods, aligned, len(rn), durMedian(rn, func(x bench.Renewal) time.Duration { return x.IdleCPU }),
			bench.RenewalWorkers, durMedian(rn, func(x bench.Renewal) time.Duration { return x.Acquire })),
		"peers have no watchdog: to keep a lock with the same lease they call Extend (redsync) or Refresh (redislock) " +
			"on each lock every period, 1 command (EVALSHA of GET+PEXPIRE: 3 calls) per lock per period; " +
			fmt.Sprintf("the measured row is one such round over all the locks from %d goroutines (its client CPU is per round = per period)",
				bench.RenewalWorkers),
	}
	return t
}

func (r report) waitersTable() table {
	w := r.res.waiters
	t := table{
		title:  fmt.Sprintf("(e) %s warden waiters on one name, one process", count(float64(r.cfg.waiters))),
		header: []string{"measure", "median"},
	}
	if len(w) == 0 {
		return t
	}
	n := float64(r.cfg.waiters)
	acquired, failed, violations := 0, 0, 0
	for _, x := range w {
		acquired += x.Acquired
		failed += x.Failed
		violations += x.Violations
	}
	t.rows = [][]string{
		{"engine heap per waiter (HeapAlloc delta after GC, minus the caller's share)", bytesf(median(w, bench.Waiters.EnginePerWaiter))},
		{"whole heap per waiter (goroutine, handle, request, engine)", bytesf(median(w, bench.Waiters.HeapPerWaiter))},
		{"caller's share per waiter (same goroutines blocked on a channel)", bytesf(median(w, func(x bench.Waiters) float64 { return float64(x.Caller) / n }))},
		{"HeapInuse per waiter", bytesf(median(w, func(x bench.Waiters) float64 { return float64(x.HeapInuse) / n }))},
		{"goroutine stack per waiter (StackInuse delta)", bytesf(median(w, func(x bench.Waiters) float64 { return float64(x.Stack) / n }))},
		{"Redis cmds/s sent while all wait", fmt.Sprintf("%.1f", median(w, bench.Waiters.SentPerSecond))},
		{"Redis calls/s executed while all wait", fmt.Sprintf("%.1f", median(w, func(x bench.Waiters) float64 {
			return float64(x.Waiting.Server.Calls) / x.Window.Seconds()
		}))},
		{"wake-up: release -> next waiter's Lock returns, p50", durMedian(w, func(x bench.Waiters) time.Duration { return x.Handoff.P50 })},
		{"wake-up p99", durMedian(w, func(x bench.Waiters) time.Duration { return x.Handoff.P99 })},
		{"wake-up max", durMedian(w, func(x bench.Waiters) time.Duration { return x.Handoff.Max })},
		{"drain: handoffs/s through all waiters", count(median(w, func(x bench.Waiters) float64 {
			return float64(x.Acquired) / x.Drain.Seconds()
		}))},
		{"acquired, all runs", fmt.Sprintf("%d of %d", acquired, len(w)*r.cfg.waiters)},
		{"failed, all runs", strconv.Itoa(failed)},
		{"mutual-exclusion violations, all runs", strconv.Itoa(violations)},
	}
	t.notes = []string{
		"every waiter releases as soon as it holds the lock, so the wake-up is measured on every handoff of the drain",
		fmt.Sprintf("peers cannot wait without polling (computed, not run): %s waiters retrying every %v send %s SETs/s; "+
			"with redsync's default rand(50ms, 250ms) delay, %s/s",
			count(n), r.cfg.retry, count(n/r.cfg.retry.Seconds()), count(n/0.150)),
	}
	return t
}

func (r report) passivationTable() table {
	p := r.res.passivation
	t := table{
		title:  fmt.Sprintf("(f) %s distinct names touched once (lock+unlock) by one warden client, idle timeout %v", count(float64(r.cfg.names)), r.cfg.idle),
		header: []string{"moment", "HeapAlloc", "x/start", "HeapInuse", "goroutines", "key actors"},
	}
	if len(p) == 0 {
		return t
	}
	phase := func(name string, f func(bench.Passivation) bench.MemReading) []string {
		return []string{name,
			mib(uint64(median(p, func(x bench.Passivation) float64 { return float64(f(x).HeapAlloc) }))),
			fmt.Sprintf("%.2f", median(p, func(x bench.Passivation) float64 { return float64(f(x).HeapAlloc) / float64(x.Start.HeapAlloc) })),
			mib(uint64(median(p, func(x bench.Passivation) float64 { return float64(f(x).HeapInuse) }))),
			count(median(p, func(x bench.Passivation) float64 { return float64(f(x).Goroutines) })),
			count(median(p, func(x bench.Passivation) float64 { return float64(f(x).KeyActors) })),
		}
	}
	t.rows = [][]string{
		phase("start", func(x bench.Passivation) bench.MemReading { return x.Start }),
		phase("after touching", func(x bench.Passivation) bench.MemReading { return x.Touched }),
		phase("after passivation", func(x bench.Passivation) bench.MemReading { return x.Passivated }),
	}
	n := float64(r.cfg.names)
	t.notes = []string{
		fmt.Sprintf("per name: %s after touching, %s still held after passivation; touching took %s (%d goroutines), "+
			"the last key actor was gone %s after the last touch",
			bytesf(median(p, func(x bench.Passivation) float64 {
				return (float64(x.Touched.HeapAlloc) - float64(x.Start.HeapAlloc)) / n
			})),
			bytesf(median(p, func(x bench.Passivation) float64 {
				return (float64(x.Passivated.HeapAlloc) - float64(x.Start.HeapAlloc)) / n
			})),
			durMedian(p, func(x bench.Passivation) time.Duration { return x.Touch }), bench.TouchWorkers,
			durMedian(p, func(x bench.Passivation) time.Duration { return x.Passivate })),
		"memory is after two GCs; key actors is the engine's count (root actor); names touched before the idle timeout ran out may passivate while touching goes on; " +
			"start includes what earlier workloads left in the process (the Go runtime keeps every goroutine descriptor it ever made): -only f gives the cleanest start",
	}
	return t
}

// pairedTable is a warden lock kind against its baseline, run back to
// back in each run (workloads g and h).
func (r report) pairedTable(title, kind, base string, runs []bench.Paired) table {
	t := table{title: title, header: []string{"configuration", "pairs/s", "x/baseline", "µs/pair", "cmds/pair", "calls/pair", "Redis CPU µs/pair"}}
	if len(runs) == 0 {
		return t
	}
	row := func(name string, f func(bench.Paired) bench.Throughput, ratio string) []string {
		return []string{name,
			count(median(runs, func(p bench.Paired) float64 { return f(p).PerSecond() })),
			ratio,
			fmt.Sprintf("%.1f", median(runs, func(p bench.Paired) float64 { return f(p).MicrosPerPair() })),
			fmt.Sprintf("%.2f", median(runs, func(p bench.Paired) float64 { return f(p).SentPerPair() })),
			fmt.Sprintf("%.2f", median(runs, func(p bench.Paired) float64 { return f(p).ServerPerPair() })),
			fmt.Sprintf("%.1f", median(runs, func(p bench.Paired) float64 { return f(p).RedisCPUPerPair() })),
		}
	}
	t.rows = [][]string{
		row(kind, func(p bench.Paired) bench.Throughput { return p.Kind }, ratio(median(runs, bench.Paired.Ratio))),
		row(base, func(p bench.Paired) bench.Throughput { return p.Base }, "1.00"),
	}
	t.notes = []string{"x/baseline: the median of the per-run ratios; both ran on one warden client, back to back"}
	return t
}

// text writes the preamble and the tables for a terminal.
func (r report) text(w io.Writer) {
	for _, l := range r.preamble() {
		fmt.Fprintln(w, l)
	}
	for _, t := range r.tables() {
		fmt.Fprintf(w, "\n%s\n", t.title)
		widths := make([]int, len(t.header))
		for _, row := range append([][]string{t.header}, t.rows...) {
			for i, cell := range row {
				widths[i] = max(widths[i], utf8.RuneCountInString(cell))
			}
		}
		line := func(row []string) {
			var b strings.Builder
			for i, cell := range row {
				pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
				if i == 0 {
					b.WriteString(cell + pad)
				} else {
					b.WriteString("  " + pad + cell)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
		line(t.header)
		for _, row := range t.rows {
			line(row)
		}
		for _, n := range t.notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
}

// markdown renders the preamble and the tables for BENCHMARKS.md.
func (r report) markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## Benchmarks\n\nTaken by `go -C bench run ./cmd/warden-bench -runs %d -duration %v -only %s`.\n\n",
		r.cfg.runs, r.cfg.duration, strings.Join(strings.Split(r.workloads, ""), ","))
	for _, l := range r.preamble() {
		if strings.HasPrefix(l, "  ") {
			name, desc, _ := strings.Cut(strings.TrimSpace(l), " ")
			fmt.Fprintf(&b, "  - `%s`: %s\n", name, strings.TrimSpace(desc))
		} else {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	if r.cfg.svg != "" {
		link := r.cfg.svg
		if rel, err := filepath.Rel(filepath.Dir(r.cfg.md), r.cfg.svg); err == nil {
			link = filepath.ToSlash(rel)
		}
		fmt.Fprintf(&b, "\n![throughput per workload per library](%s)\n", link)
	}
	for _, t := range r.tables() {
		fmt.Fprintf(&b, "\n### %s\n\n", t.title)
		fmt.Fprintf(&b, "| %s |\n|", strings.Join(t.header, " | "))
		for i := range t.header {
			if i == 0 {
				b.WriteString(" --- |")
			} else {
				b.WriteString(" ---: |")
			}
		}
		b.WriteString("\n")
		for _, row := range t.rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
		if len(t.notes) > 0 {
			b.WriteString("\n")
			for _, n := range t.notes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
		}
	}
	return b.Bytes()
}

// count formats a count or rate with thousands separators.
func count(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ratio(f float64) string { return fmt.Sprintf("%.2f", f) }

// durMedian formats the median over runs of f.
func durMedian[T any](runs []T, f func(T) time.Duration) string {
	return dur(time.Duration(median(runs, func(x T) float64 { return float64(f(x)) })))
}

// dur formats d with three significant digits.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func bytesf(b float64) string {
	if b >= 1<<20 || b <= -(1<<20) {
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	if b >= 10<<10 || b <= -(10<<10) {
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
