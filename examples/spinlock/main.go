// Command spinlock shows warden's spin lock: a holder in one process keeps
// it while three workers in another wait for it. The waiters poll Redis
// with back-off (Redisson's exponential back-off: 1ms, doubling up to
// 128ms), sharing one poll in their process, and nothing subscribes to the
// lock's channel; the holder's unlock publishes nothing, and the workers
// take the lock in turn, never two at once.
//
//	go run ./examples/spinlock
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
	"github.com/warden-go/warden/redisio"
)

const (
	lockName = "spinlock:inventory"
	workers  = 3
	held     = 300 * time.Millisecond // how long the holder keeps it
	work     = 20 * time.Millisecond
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(ctx context.Context, holderClient *client.Client, rdb redis.UniversalClient) error {
	// The workers run in a second Client, as another process would.
	workerClient, err := client.New(rdb)
	if err != nil {
		return err
	}
	defer func() { _ = workerClient.Close(context.Background()) }()

	holder := holderClient.SpinLock(lockName)
	if err := holder.Lock(ctx); err != nil {
		return err
	}
	fmt.Println("holder: locked", lockName)

	var holders atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		l := workerClient.SpinLock(lockName)
		wg.Go(func() {
			if err := l.Lock(ctx); err != nil { // polls until the lock is free
				errs <- err
				return
			}
			if holders.Add(1) != 1 {
				errs <- errors.New("two holders at once")
			}
			time.Sleep(work)
			holders.Add(-1)
			fmt.Printf("worker %d: got the lock and released it\n", i+1)
			errs <- l.Unlock(ctx)
		})
	}

	time.Sleep(held)
	ch := redisio.LockChannel(lockName)
	subs, err := rdb.PubSubNumSub(ctx, ch).Result()
	if err != nil {
		return err
	}
	fmt.Printf("while %d workers wait: %d subscribers on %s\n", workers, subs[ch], ch)
	if err := holder.Unlock(ctx); err != nil {
		return err
	}
	fmt.Println("holder: unlocked (nothing published)")

	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Println("done: every worker took the lock in turn, by polling")
	return nil
}
