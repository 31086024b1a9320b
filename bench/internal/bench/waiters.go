package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiters is one run of workload (e): many goroutines of one process
// blocked in warden's Lock on one name, then released one by one.
type Waiters struct {
	Waiters int
	// Heap is the growth of HeapAlloc (after GC) with every waiter blocked
	// in Lock; HeapInuse the same for HeapInuse. Caller is the HeapAlloc
	// growth of as many goroutines that each made a handle and block on a
	// channel instead: what the waiting goroutines themselves cost. The
	// engine's share is Heap - Caller. Stack is the StackInuse growth.
	Heap, HeapInuse, Caller, Stack int64
	// Waiting is the Redis cost over Window while all of them wait.
	Window  time.Duration
	Waiting Cost
	// Handoff is from a holder's release (just before its Unlock call) to
	// the moment the next waiter's Lock returned, over every handoff of
	// the drain; Drain is from the first release to the last acquisition.
	Handoff Latency
	Drain   time.Duration
	// Acquired counts the waiters whose Lock returned nil; Failed those
	// whose Lock or Unlock failed (or timed out).
	Acquired, Failed int
	Violations       int
}

// EnginePerWaiter is the engine's heap per waiter, in bytes.
func (w Waiters) EnginePerWaiter() float64 { return float64(w.Heap-w.Caller) / float64(w.Waiters) }

// HeapPerWaiter is the whole heap growth per waiter, in bytes.
func (w Waiters) HeapPerWaiter() float64 { return float64(w.Heap) / float64(w.Waiters) }

// SentPerSecond is the commands sent per second while everyone waits.
func (w Waiters) SentPerSecond() float64 { return float64(w.Waiting.Sent.Cmds) / w.Window.Seconds() }

// RunWaiters holds name with one warden client, blocks waiters goroutines
// in Lock on it, measures memory and the Redis traffic of waiting for
// window, then releases the lock: each waiter releases as soon as it holds
// it, so the lock passes through all of them. stats is the client INFO is
// read on.
func RunWaiters(ctx context.Context, addr string, stats redis.UniversalClient, name string, waiters int, window time.Duration) (Waiters, error) {
	c, rdb, cnt, err := NewWarden(addr)
	if err != nil {
		return Waiters{}, err
	}
	defer rdb.Close()
	defer c.Close(ctx)
	w := Waiters{Waiters: waiters, Window: window}
	holder := c.Lock(name)
	if err := holder.Lock(ctx); err != nil {
		return w, fmt.Errorf("warden: holder: %w", err)
	}

	// What the goroutines and handles cost by themselves.
	before := memStats()
	release := make(chan struct{})
	var started sync.WaitGroup
	var idle sync.WaitGroup
	started.Add(waiters)
	for range waiters {
		idle.Go(func() {
			h := c.Lock(name)
			started.Done()
			<-release
			runtime.KeepAlive(h)
		})
	}
	started.Wait()
	w.Caller = int64(memStats().HeapAlloc) - int64(before.HeapAlloc)
	close(release)
	idle.Wait()

	// The waiters.
	before = memStats()
	var (
		holders, violations atomic.Int64
		acquired, failed    atomic.Int64
		lastRelease         atomic.Int64 // ns since base
		last                atomic.Int64 // ns since base of the last acquisition
		wg                  sync.WaitGroup
	)
	defer wg.Wait() // after cancel (deferred below, so run first) has ended every wait
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	handoffs := make([]time.Duration, waiters)
	base := time.Now()
	started.Add(waiters)
	for range waiters {
		wg.Go(func() {
			h := c.Lock(name)
			started.Done()
			if err := h.Lock(waitCtx); err != nil {
				failed.Add(1)
				return
			}
			got := time.Since(base)
			if holders.Add(1) > 1 {
				violations.Add(1)
			}
			n := acquired.Add(1)
			handoffs[n-1] = got - time.Duration(lastRelease.Load())
			last.Store(int64(got))
			lastRelease.Store(int64(time.Since(base)))
			holders.Add(-1)
			if err := h.Unlock(ctx); err != nil {
				failed.Add(1)
			}
		})
	}
	started.Wait()
	awaitQuiet(cnt, 500*time.Millisecond, 30*time.Second)
	after := memStats()
	w.Heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	w.HeapInuse = int64(after.HeapInuse) - int64(before.HeapInuse)
	w.Stack = int64(after.StackInuse) - int64(before.StackInuse)

	m, err := startMeter(ctx, stats, cnt)
	if err != nil {
		return w, err
	}
	sleep(ctx, window)
	if w.Waiting, err = m.stop(ctx); err != nil {
		return w, err
	}

	first := time.Since(base)
	lastRelease.Store(int64(first))
	if err := holder.Unlock(ctx); err != nil {
		return w, fmt.Errorf("warden: holder: %w", err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(30*time.Second + time.Duration(waiters)*10*time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cancel()
		<-done
	}
	w.Acquired, w.Failed, w.Violations = int(acquired.Load()), int(failed.Load()), int(violations.Load())
	w.Handoff = summarize(handoffs[:w.Acquired])
	w.Drain = time.Duration(last.Load()) - first
	return w, nil
}

// memStats collects garbage twice and returns the memory statistics.
func memStats() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// awaitQuiet waits until the client counted by cnt has sent nothing for
// quiet, or limit passed.
func awaitQuiet(cnt *Counter, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	n, changed := cnt.Read().Cmds, time.Now()
	for time.Since(changed) < quiet && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if m := cnt.Read().Cmds; m != n {
			n, changed = m, time.Now()
		}
	}
}
