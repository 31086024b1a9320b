package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Throughput is one run of lock+unlock pairs by goroutines that each use a
// name of their own, so nobody ever waits: workloads (a) and (b).
type Throughput struct {
	Goroutines int
	Pairs      int
	Elapsed    time.Duration
	Cost       Cost
}

// PerSecond is the pairs completed per second, all goroutines together.
func (t Throughput) PerSecond() float64 { return float64(t.Pairs) / t.Elapsed.Seconds() }

// MicrosPerPair is the mean time of one pair as one goroutine sees it, in
// µs: the goroutines' time together over the pairs.
func (t Throughput) MicrosPerPair() float64 {
	return float64(t.Goroutines) * t.Elapsed.Seconds() / float64(max(t.Pairs, 1)) * 1e6
}

// SentPerPair is the commands the contender's client sent per pair.
func (t Throughput) SentPerPair() float64 { return perOp(t.Cost.Sent.Cmds, t.Pairs) }

// ServerPerPair is the calls Redis executed per pair, in scripts included.
func (t Throughput) ServerPerPair() float64 { return perOp(t.Cost.Server.Calls, t.Pairs) }

// RedisCPUPerPair is the redis-server process's CPU time (user + system)
// per pair, in µs: at that cost Redis could serve about 1e6 /
// RedisCPUPerPair pairs a second.
func (t Throughput) RedisCPUPerPair() float64 {
	return perOp(uint64(t.Cost.Server.CPU.Nanoseconds()), t.Pairs) / 1e3
}

// ScriptsPerPair is the time Redis spent in scripts per pair, in µs
// (elapsed time, as commandstats measures it): most of it is part of
// RedisCPUPerPair, whose rest is reading and writing the connections and
// the commands sent outside scripts.
func (t Throughput) ScriptsPerPair() float64 {
	return perOp(uint64(t.Cost.Server.Scripts.Nanoseconds()), t.Pairs) / 1e3
}

// ClientCPUPerPair is the CPU time this process used per pair, in µs: the
// contender's client and the workload's goroutines.
func (t Throughput) ClientCPUPerPair() float64 {
	return perOp(uint64(t.Cost.ClientCPU.Nanoseconds()), t.Pairs) / 1e3
}

func perOp(n uint64, ops int) float64 {
	if ops == 0 {
		return 0
	}
	return float64(n) / float64(ops)
}

// throughputWarmup is the pairs each goroutine runs before the clock
// starts: it loads scripts and fills the pool.
const throughputWarmup = 20

// RunThroughput runs goroutines goroutines, each locking and unlocking the
// name "<prefix>:<i>" in a loop, for d, or for pairs pairs in all when
// pairs > 0. stats is the client INFO is read on.
func RunThroughput(ctx context.Context, c *Contender, stats redis.UniversalClient, prefix string, goroutines int, d time.Duration, pairs int) (Throughput, error) {
	if goroutines < 1 {
		return Throughput{}, fmt.Errorf("bench: %d goroutines", goroutines)
	}
	return runPairs(ctx, c.Counter, stats, c.Name, goroutines, d, pairs, throughputWarmup, func(i int) func() Mutex {
		m := c.NewMutex(prefix + ":" + strconv.Itoa(i))
		return func() Mutex { return m }
	})
}

// runPairs runs goroutines goroutines for d, or for pairs pairs in all
// when pairs > 0, each locking and unlocking in a loop the Mutex its next
// function (made once per goroutine by next(g)) returns, and measures them
// on cnt and stats. Each goroutine's warmup pairs run first, one goroutine
// after the other. name, when set, leads the errors.
func runPairs(ctx context.Context, cnt *Counter, stats redis.UniversalClient, name string, goroutines int, d time.Duration,
	pairs, warmup int, next func(g int) func() Mutex) (Throughput, error) {
	nexts := make([]func() Mutex, goroutines)
	for g := range nexts {
		nexts[g] = next(g)
		for range warmup {
			if err := pair(ctx, nexts[g]()); err != nil {
				if name != "" {
					return Throughput{}, fmt.Errorf("%s warm-up: %w", name, err)
				}
				return Throughput{}, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	m, err := startMeter(ctx, stats, cnt)
	if err != nil {
		return Throughput{}, err
	}
	counts := make([]int, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for g := range goroutines {
		quota := 0
		if pairs > 0 {
			quota = pairs/goroutines + btoi(g < pairs%goroutines)
		}
		wg.Go(func() {
			for n := 0; ; n++ {
				if quota > 0 && n == quota || quota == 0 && !time.Now().Before(end) {
					return
				}
				if err := pair(ctx, nexts[g]()); err != nil {
					errs[g] = err
					if name != "" {
						errs[g] = fmt.Errorf("%s: %w", name, err)
					}
					return
				}
				counts[g]++
			}
		})
	}
	wg.Wait()
	t := Throughput{Goroutines: goroutines, Elapsed: time.Since(start)}
	for g := range counts {
		if errs[g] != nil {
			return t, errs[g]
		}
		t.Pairs += counts[g]
	}
	t.Cost, err = m.stop(ctx)
	return t, err
}

func pair(ctx context.Context, m Mutex) error {
	if err := m.Lock(ctx); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if err := m.Unlock(ctx); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
