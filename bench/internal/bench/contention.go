package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Contention is one run of goroutines competing for one name, each holding
// it for a busy critical section: workload (c).
type Contention struct {
	Goroutines int
	Critical   time.Duration
	Elapsed    time.Duration
	Acquired   int
	// Wait is from the moment a goroutine starts asking (its first Lock
	// call of this acquisition) to the moment it holds the lock, over the
	// acquisitions that completed.
	Wait Latency
	// Unfinished counts the waits still going when the run ended, and
	// LongestUnfinished is the longest of them (a lower bound on its wait).
	Unfinished        int
	LongestUnfinished time.Duration
	// Reacquired counts acquisitions won by the goroutine that released
	// the lock just before; Successions counts the acquisitions that had
	// a previous holder (all but the first).
	Reacquired, Successions int
	// Handoff is from the previous holder's release (the end of its
	// critical section, just before its Unlock call) to the moment the
	// next holder's Lock returned, when the next holder is another
	// goroutine.
	Handoff Latency
	// Violations counts acquisitions that found another holder inside the
	// critical section: each breaks mutual exclusion.
	Violations int
	// GaveUp counts Lock calls the library gave up on (its retry budget
	// ran out); the goroutine asked again and its wait went on.
	GaveUp int
	Cost   Cost
}

// PerSecond is the acquisitions per second.
func (c Contention) PerSecond() float64 { return float64(c.Acquired) / c.Elapsed.Seconds() }

// ReacquireShare is the share of acquisitions won by the goroutine that
// released just before.
func (c Contention) ReacquireShare() float64 {
	if c.Successions == 0 {
		return 0
	}
	return float64(c.Reacquired) / float64(c.Successions)
}

// SentPerAcquisition is the commands the client sent per acquisition
// (lock, retries and unlock).
func (c Contention) SentPerAcquisition() float64 { return perOp(c.Cost.Sent.Cmds, c.Acquired) }

// ServerPerAcquisition is the calls Redis executed per acquisition.
func (c Contention) ServerPerAcquisition() float64 { return perOp(c.Cost.Server.Calls, c.Acquired) }

// RedisCPUPerAcquisition is Redis's CPU time per acquisition, in µs.
func (c Contention) RedisCPUPerAcquisition() float64 {
	return perOp(uint64(c.Cost.Server.CPU.Nanoseconds()), c.Acquired) / 1e3
}

// MaxWait is the longest wait seen, finished or not.
func (c Contention) MaxWait() time.Duration { return max(c.Wait.Max, c.LongestUnfinished) }

// Spin busy-waits for d on the clock. A critical section made of
// time.Sleep would last about a millisecond whatever d is, the timer's
// granularity; spinning makes it last d.
func Spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// contender's result, merged after the run.
type contenderRun struct {
	waits, handoffs         []time.Duration
	reacquired, successions int
	gaveUp                  int
	pending                 time.Duration // > 0: still waiting at the end
	err                     error
}

// RunContention runs goroutines goroutines, each with its own handle on
// name, acquiring, spinning for critical and releasing in a loop for d.
// stats is the client INFO is read on.
func RunContention(ctx context.Context, c *Contender, stats redis.UniversalClient, name string, goroutines int, critical, d time.Duration) (Contention, error) {
	if goroutines < 1 {
		return Contention{}, fmt.Errorf("bench: %d goroutines", goroutines)
	}
	mutexes := make([]Mutex, goroutines)
	for i := range mutexes {
		mutexes[i] = c.NewMutex(name)
		if err := pair(ctx, mutexes[i]); err != nil {
			return Contention{}, fmt.Errorf("%s warm-up: %w", c.Name, err)
		}
	}
	m, err := startMeter(ctx, stats, c.Counter)
	if err != nil {
		return Contention{}, err
	}
	var (
		holders, violations atomic.Int64
		lastHolder          atomic.Int64 // goroutine index; -1 none yet
		lastRelease         atomic.Int64 // ns since base
		wg                  sync.WaitGroup
	)
	lastHolder.Store(-1)
	runs := make([]contenderRun, goroutines)
	base := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, base.Add(d))
	defer cancel()
	for i := range goroutines {
		wg.Go(func() {
			r, mu := &runs[i], mutexes[i]
			for runCtx.Err() == nil {
				asked := time.Now()
				for {
					err := mu.Lock(runCtx)
					if err == nil {
						break
					}
					if runCtx.Err() != nil {
						r.pending = time.Since(asked)
						return
					}
					if !gaveUp(err) {
						r.err = fmt.Errorf("%s: lock: %w", c.Name, err)
						cancel()
						return
					}
					r.gaveUp++
				}
				got := time.Now()
				if holders.Add(1) > 1 {
					violations.Add(1)
				}
				r.waits = append(r.waits, got.Sub(asked))
				if prev := lastHolder.Swap(int64(i)); prev == int64(i) {
					r.reacquired++
					r.successions++
				} else if prev >= 0 {
					r.successions++
					r.handoffs = append(r.handoffs, got.Sub(base.Add(time.Duration(lastRelease.Load()))))
				}
				Spin(critical)
				lastRelease.Store(int64(time.Since(base)))
				holders.Add(-1)
				if err := mu.Unlock(ctx); err != nil {
					r.err = fmt.Errorf("%s: unlock: %w", c.Name, err)
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	out := Contention{Goroutines: goroutines, Critical: critical, Elapsed: d, Violations: int(violations.Load())}
	var waits, handoffs []time.Duration
	for _, r := range runs {
		if r.err != nil {
			return out, r.err
		}
		waits = append(waits, r.waits...)
		handoffs = append(handoffs, r.handoffs...)
		out.Reacquired += r.reacquired
		out.Successions += r.successions
		out.GaveUp += r.gaveUp
		if r.pending > 0 {
			out.Unfinished++
			out.LongestUnfinished = max(out.LongestUnfinished, r.pending)
		}
	}
	out.Acquired = len(waits)
	out.Wait = summarize(waits)
	out.Handoff = summarize(handoffs)
	out.Cost, err = m.stop(ctx)
	return out, err
}
