// Command quickstart shows warden's reentrant lock: first the README's
// quickstart (shipOrder), then two workers, each with its own handle on
// the same lock, take turns holding it; the first one reenters it and
// holds it longer than its lease while the watchdog renews it.
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

	"github.com/redis/go-redis/v9"

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

	// The README's quickstart, on this Redis.
	if err := shipOrder(ctx, rdb); err != nil {
		return err
	}

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

// shipOrder locks order 42 while it ships it. rdb is any go-redis client, such as
// redis.NewClient(&redis.Options{Addr: "localhost:6379"}); the caller closes it.
func shipOrder(ctx context.Context, rdb redis.UniversalClient) error {
	c, err := client.New(rdb)
	if err != nil {
		return err
	}
	defer c.Close(ctx)

	lock := c.Lock("order:42")

	// Wait until the lock is free or ctx ends; the watchdog renews it while held.
	if err := lock.Lock(ctx); err != nil {
		return err
	}
	// ... critical section ...
	if err := lock.Unlock(ctx); err != nil {
		return err
	}

	// Lock, run fn, unlock (even if fn panics). fn's context is cancelled
	// with cause ErrLockLost if the lock is lost while fn runs, or the Client
	// closes (then the cause matches ErrClosed too).
	if err := lock.Do(ctx, func(ctx context.Context) error { return ship(ctx, 42) }); err != nil {
		return err
	}

	// Wait at most 2s; hold for a fixed 10s lease with no renewal.
	ok, err := lock.TryLockWait(ctx, 2*time.Second, 10*time.Second)
	if err != nil || !ok {
		return err
	}
	return lock.Unlock(ctx)
}

// ship stands for the work the lock protects.
func ship(ctx context.Context, order int) error {
	fmt.Println("shipped order", order, "under its lock")
	return ctx.Err()
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
