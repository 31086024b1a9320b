// Command semaphore shows warden's counting semaphore: five workers share
// two permits, so never more than two of them work at once.
//
//	go run ./examples/semaphore
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

const (
	semName = "semaphore:uploads"
	permits = 2
	workers = 5
	work    = 150 * time.Millisecond
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error {
	// A semaphore lives on in Redis: start each run from a fresh one.
	sem := c.Semaphore(semName)
	if _, err := sem.Delete(ctx); err != nil {
		return err
	}
	// Set it with a time to live, so that it goes by itself even if this
	// run dies half way; and delete it at the end, so the example leaves
	// nothing behind in your Redis.
	defer deleteKeys(rdb, semName)
	if ok, err := sem.TrySetPermitsTTL(ctx, permits, time.Minute); err != nil || !ok {
		return errors.Join(errors.New("could not set the permits"), err)
	}
	fmt.Printf("%s has %d permits for %d workers\n", semName, permits, workers)

	var (
		mu           sync.Mutex
		inside, peak int
		wg           sync.WaitGroup
	)
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sem.Acquire(ctx, 1); err != nil {
				errs <- fmt.Errorf("worker-%d: %w", i, err)
				return
			}
			mu.Lock()
			inside++
			peak = max(peak, inside)
			fmt.Printf("worker-%d took a permit: %d inside\n", i, inside)
			mu.Unlock()
			time.Sleep(work)
			mu.Lock()
			inside--
			mu.Unlock()
			errs <- sem.Release(ctx, 1)
		}()
	}
	wg.Wait()
	close(errs)
	var err error
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err != nil {
		return err
	}
	if peak > permits {
		return fmt.Errorf("%d workers inside at once with %d permits", peak, permits)
	}
	if n, err := sem.AvailablePermits(ctx); err != nil || n != permits {
		return errors.Join(fmt.Errorf("%d permits available at the end, want %d", n, permits), err)
	}
	if ttl, err := sem.RemainTTL(ctx); err != nil || ttl <= 0 {
		return errors.Join(fmt.Errorf("the semaphore's TTL is %v, want the one it was set with", ttl), err)
	}
	if ok, err := sem.Delete(ctx); err != nil || !ok {
		return errors.Join(errors.New("could not delete the semaphore"), err)
	}

	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("done: at most %d workers inside at once; %d permits were available again, and the semaphore is deleted\n", peak, permits)
	return nil
}

// deleteKeys deletes keys, even after the demo's context ended.
func deleteKeys(rdb redis.UniversalClient, keys ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		fmt.Println("could not delete", keys, err)
	}
}
