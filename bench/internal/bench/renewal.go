package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// Renewal is one run of workload (d): Locks watchdog-mode locks held by one
// warden client, measured over whole renewal periods (Watchdog/3).
type Renewal struct {
	Locks    int
	Watchdog time.Duration
	Period   time.Duration
	Periods  int
	// Aligned is set when the window began and ended just after a renewal
	// burst, so it holds exactly Periods renewals; otherwise it is Periods
	// periods of wall time from an arbitrary phase.
	Aligned bool
	Window  time.Duration
	Cost    Cost
	// CPU is the process CPU time over the window; IdleCPU is its CPU over
	// one period before any lock was taken, polling the command counter as
	// the window does, for comparison.
	CPU, IdleCPU time.Duration
	Acquire      time.Duration // to take all Locks, RenewalWorkers goroutines
}

// SentPerPeriod is the commands the client sent per renewal period.
func (r Renewal) SentPerPeriod() float64 { return perOp(r.Cost.Sent.Cmds, r.Periods) }

// TripsPerPeriod is the round trips the client took per renewal period.
func (r Renewal) TripsPerPeriod() float64 { return perOp(r.Cost.Sent.Trips, r.Periods) }

// ServerPerPeriod is the calls Redis executed per renewal period.
func (r Renewal) ServerPerPeriod() float64 { return perOp(r.Cost.Server.Calls, r.Periods) }

// CPUPerPeriod is the process CPU per renewal period.
func (r Renewal) CPUPerPeriod() time.Duration { return r.CPU / time.Duration(max(r.Periods, 1)) }

// RedisCPUPerPeriod is Redis's CPU per renewal period.
func (r Renewal) RedisCPUPerPeriod() time.Duration {
	return r.Cost.Server.CPU / time.Duration(max(r.Periods, 1))
}

// RenewalWorkers is how many goroutines take and release the locks of
// workload (d) and extend the peer's.
const RenewalWorkers = 32

// RunRenewal takes locks watchdog-mode locks "<prefix>:<i>" with one warden
// client whose watchdog timeout is watchdog, measures periods renewal
// periods, and releases them. stats is the client INFO is read on.
func RunRenewal(ctx context.Context, addr string, stats redis.UniversalClient, prefix string, locks int, watchdog time.Duration, periods int) (Renewal, error) {
	c, rdb, cnt, err := NewWarden(addr, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		return Renewal{}, err
	}
	defer rdb.Close()
	defer c.Close(ctx)
	period := watchdog / 3
	r := Renewal{Locks: locks, Watchdog: watchdog, Period: period, Periods: max(periods, 1)}

	quiet, limit := period/4, 2*period+period/4
	cpu := ProcessCPU()
	awaitBurst(ctx, cnt, period, period) // polls as the window will, and sees no burst
	r.IdleCPU = ProcessCPU() - cpu

	handles := make([]*client.Lock, locks)
	for i := range handles {
		handles[i] = c.Lock(prefix + ":" + strconv.Itoa(i))
	}
	start := time.Now()
	if err := parallel(RenewalWorkers, locks, func(i int) error { return handles[i].Lock(ctx) }); err != nil {
		return r, fmt.Errorf("warden: take %d locks: %w", locks, err)
	}
	r.Acquire = time.Since(start)
	defer func() {
		_ = parallel(RenewalWorkers, locks, func(i int) error { return handles[i].Unlock(ctx) })
	}()

	r.Aligned = awaitBurst(ctx, cnt, quiet, limit)
	m, err := startMeter(ctx, stats, cnt)
	if err != nil {
		return r, err
	}
	cpu, start = ProcessCPU(), time.Now()
	if r.Aligned {
		for range r.Periods {
			if !awaitBurst(ctx, cnt, quiet, limit) {
				r.Aligned = false
				break
			}
		}
	}
	if !r.Aligned {
		sleep(ctx, time.Duration(r.Periods)*period-time.Since(start))
	}
	r.CPU, r.Window = ProcessCPU()-cpu, time.Since(start)
	r.Cost, err = m.stop(ctx)
	return r, err
}

// awaitBurst waits for the client counted by cnt to send something and
// then stay silent for quiet: the end of one renewal burst. It gives up
// after limit and reports whether it saw one.
func awaitBurst(ctx context.Context, cnt *Counter, quiet, limit time.Duration) bool {
	const poll = 10 * time.Millisecond
	deadline := time.Now().Add(limit)
	n := cnt.Read().Cmds
	for cnt.Read().Cmds == n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(poll)
	}
	n, changed := cnt.Read().Cmds, time.Now()
	for time.Since(changed) < quiet {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(poll)
		if m := cnt.Read().Cmds; m != n {
			n, changed = m, time.Now()
		}
	}
	return true
}

// ExtendRound is what a peer without a watchdog pays to keep Locks locks
// alive for one period: one redsync Extend per lock, from Goroutines
// goroutines on the peer's pool.
type ExtendRound struct {
	Locks, Goroutines int
	Wall, CPU         time.Duration
	Cost              Cost
}

// RunExtendRound takes locks redsync locks "<prefix>:<i>" with lease on
// c's client (c must be a redsync contender's), extends each once,
// measuring that round, and releases them.
func RunExtendRound(ctx context.Context, c *Contender, stats redis.UniversalClient, prefix string, locks int, lease time.Duration) (ExtendRound, error) {
	rs := redsync.New(goredis.NewPool(c.Redis))
	mutexes := make([]*redsync.Mutex, locks)
	for i := range mutexes {
		// A per-node timeout of half the lease (redsync's default is 5%:
		// 15 ms for a short test lease, too little on a loaded machine).
		mutexes[i] = rs.NewMutex(prefix+":"+strconv.Itoa(i), redsync.WithExpiry(lease), redsync.WithTries(1),
			redsync.WithTimeoutFactor(0.5))
	}
	if err := parallel(RenewalWorkers, locks, func(i int) error { return mutexes[i].LockContext(ctx) }); err != nil {
		return ExtendRound{}, fmt.Errorf("redsync: take %d locks: %w", locks, err)
	}
	defer func() {
		_ = parallel(RenewalWorkers, locks, func(i int) error { _, err := mutexes[i].UnlockContext(ctx); return err })
	}()
	if _, err := mutexes[0].ExtendContext(ctx); err != nil { // loads the script
		return ExtendRound{}, fmt.Errorf("redsync: extend: %w", err)
	}
	m, err := startMeter(ctx, stats, c.Counter)
	if err != nil {
		return ExtendRound{}, err
	}
	cpu, start := ProcessCPU(), time.Now()
	if err := parallel(RenewalWorkers, locks, func(i int) error {
		ok, err := mutexes[i].ExtendContext(ctx)
		if err == nil && !ok {
			err = redsync.ErrExtendFailed
		}
		return err
	}); err != nil {
		return ExtendRound{}, fmt.Errorf("redsync: extend: %w", err)
	}
	r := ExtendRound{Locks: locks, Goroutines: RenewalWorkers, Wall: time.Since(start), CPU: ProcessCPU() - cpu}
	r.Cost, err = m.stop(ctx)
	return r, err
}

// parallel runs f(0) .. f(n-1) on workers goroutines and returns the first
// error.
func parallel(workers, n int, f func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
