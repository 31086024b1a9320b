// Command quickstart shows warden's reentrant lock: two workers, each with
// its own handle on the same lock, take turns holding it; the first one
// reenters it and holds it longer than its lease while the watchdog renews
// it.
//
//	go run ./examples/quickstart
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

const (
	lockName  = "quickstart:job"
	watchdog  = 900 * time.Millisecond // short, so that renewal shows
	longWork  = 1100 * time.Millisecond
	shortWork = 200 * time.Millisecond
	offLock   = 100 * time.Millisecond // work between two turns
)

func main() {
	if err := run(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, where, stopRedis, err := exampleredis.Connect(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()
	fmt.Println("redis:", where)

	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }() // ErrClosed after the Close below
	fmt.Printf("watchdog %v: held locks are renewed every %v\n", watchdog, watchdog/3)

	var holders atomic.Int32 // workers inside the critical section
	started := make(chan struct{})
	w1 := &worker{name: "worker-1", lock: c.Lock(lockName), holders: &holders}
	w2 := &worker{name: "worker-2", lock: c.Lock(lockName), holders: &holders}

	long := func(ctx context.Context, w *worker) error {
		// Reentry: the same handle (the same owner) locks again.
		if err := w.lock.Lock(ctx); err != nil {
			return err
		}
		n, err := w.lock.HoldCount(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("%s locked it again (reentrant): hold count %d\n", w.name, n)
		close(started) // now let worker-2 contend

		before, err := w.lock.RemainTTL(ctx)
		if err != nil {
			return err
		}
		time.Sleep(longWork)
		after, err := w.lock.RemainTTL(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("%s worked %v with a %v lease: ttl %v before, %v after (renewed)\n",
			w.name, longWork, watchdog, before, after)

		if err := w.lock.Unlock(ctx); err != nil {
			return err
		}
		n, err = w.lock.HoldCount(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("%s unlocked once: hold count %d\n", w.name, n)
		return nil
	}
	short := func(context.Context, *worker) error {
		time.Sleep(shortWork)
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, turn := range []struct {
		w     *worker
		after <-chan struct{}
		jobs  []func(context.Context, *worker) error
	}{
		{w1, nil, []func(context.Context, *worker) error{long, short}},
		{w2, started, []func(context.Context, *worker) error{short, short}},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if turn.after != nil {
				select {
				case <-turn.after:
				case <-ctx.Done():
					return
				}
			}
			for _, job := range turn.jobs {
				if err := turn.w.turn(ctx, job); err != nil {
					errs <- fmt.Errorf("%s: %w", turn.w.name, err)
					cancel() // stop the other worker too
					return
				}
				time.Sleep(offLock)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(<-errs, <-errs); err != nil {
		return err
	}

	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Println("done: 4 turns, never two holders at once")
	return nil
}

// worker holds its own handle on the lock, so it is its own owner.
type worker struct {
	name    string
	lock    *client.Lock
	holders *atomic.Int32
}

// turn takes the lock, runs job under it and releases it.
func (w *worker) turn(ctx context.Context, job func(context.Context, *worker) error) error {
	start := time.Now()
	ok, err := w.lock.TryLock(ctx)
	if err != nil {
		return err
	}
	if ok {
		fmt.Printf("%s acquired %s\n", w.name, lockName)
	} else {
		fmt.Printf("%s waits: %s is held\n", w.name, lockName)
		if err := w.lock.Lock(ctx); err != nil {
			return err
		}
		fmt.Printf("%s acquired it after waiting %v\n", w.name, time.Since(start).Round(10*time.Millisecond))
	}

	if w.holders.Add(1) != 1 {
		return errors.New("two holders at once")
	}
	jobErr := job(ctx, w)
	w.holders.Add(-1)
	if jobErr == nil {
		fmt.Printf("%s releases it\n", w.name)
	}
	return errors.Join(jobErr, w.lock.Unlock(ctx))
}
