// Command latch shows warden's count-down latch: main waits on a latch of
// count 3 until three workers, each ready at its own time, count it down.
//
//	go run ./examples/latch
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

const (
	latchName = "latch:startup"
	workers   = 3
	step      = 100 * time.Millisecond // worker i is ready after (i+1) steps
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(ctx context.Context, c *client.Client, _ redis.UniversalClient) error {
	// Clear what an interrupted run may have left, then set the count.
	latch := c.CountDownLatch(latchName)
	if _, err := latch.Delete(ctx); err != nil {
		return err
	}
	if ok, err := latch.TrySetCount(ctx, workers); err != nil || !ok {
		return errors.Join(errors.New("could not set the count"), err)
	}

	var (
		ready atomic.Int32
		wg    sync.WaitGroup
	)
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i+1) * step)
			ready.Add(1)
			fmt.Printf("worker-%d ready: counts down\n", i)
			errs <- latch.CountDown(ctx)
		}()
	}

	fmt.Printf("main awaits %s (count %d)\n", latchName, workers)
	awaitErr := latch.Await(ctx)
	n := ready.Load()
	wg.Wait()
	close(errs)
	for e := range errs {
		awaitErr = errors.Join(awaitErr, e)
	}
	if awaitErr != nil {
		return awaitErr
	}
	if n != workers {
		return fmt.Errorf("main's Await returned when %d of %d workers were ready", n, workers)
	}
	fmt.Printf("main's Await returned: all %d workers ready\n", n)
	if left, err := latch.Count(ctx); err != nil || left != 0 {
		return errors.Join(fmt.Errorf("count %d after Await, want 0", left), err)
	}

	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Println("done: the latch is open (count 0)")
	return nil
}
