// Command fairlock shows warden's fair lock: while a holder keeps it, four
// workers arrive one after another and queue; once it is released they
// acquire it in the order they arrived.
//
//	go run ./examples/fairlock
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
	"github.com/warden-go/warden/redisio"
)

const (
	lockName = "fairlock:job"
	workers  = 4
	work     = 50 * time.Millisecond
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(parent context.Context, c *client.Client, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var err error

	holder := c.FairLock(lockName)
	if err := holder.Lock(ctx); err != nil {
		return err
	}
	fmt.Println("holder acquired", lockName)

	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	errs := make(chan error, workers)
	defer func() { cancel(); wg.Wait() }() // on an early return, stop the workers
	for i := range workers {
		l := c.FairLock(lockName) // its own handle, so its own owner
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				errs <- fmt.Errorf("worker-%d: %w", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			fmt.Printf("worker-%d acquired it\n", i)
			mu.Unlock()
			time.Sleep(work)
			if err := l.Unlock(ctx); err != nil {
				errs <- fmt.Errorf("worker-%d: %w", i, err)
			}
		}()
		// Let the worker take its place in the queue before the next arrives.
		for n := int64(0); n != int64(i+1); time.Sleep(5 * time.Millisecond) {
			if n, err = rdb.LLen(ctx, redisio.FairQueueKey(lockName)).Result(); err != nil {
				return err
			}
		}
		fmt.Printf("worker-%d waits, place %d in the queue\n", i, i+1)
	}

	fmt.Println("holder releases it")
	if err := holder.Unlock(ctx); err != nil {
		return err
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err != nil {
		return err
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(order, want) {
		return fmt.Errorf("acquired in order %v, want arrival order %v", order, want)
	}

	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Println("done: the workers acquired it in the order they arrived")
	return nil
}
