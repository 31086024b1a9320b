// Command rwlock shows warden's read/write lock: three readers hold it
// together, a writer waits until they have all left and then holds it
// alone, and a reader arriving meanwhile is kept out.
//
//	go run ./examples/rwlock
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
	lockName = "rwlock:config"
	readers  = 3
	read     = 200 * time.Millisecond
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(parent context.Context, c *client.Client, _ redis.UniversalClient) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()

	var (
		inside atomic.Int32 // readers holding the read lock
		wg     sync.WaitGroup
	)
	allIn := make(chan struct{})
	errs := make(chan error, readers)
	defer func() { cancel(); wg.Wait() }() // on an early return, stop the readers
	for i := range readers {
		r := c.ReadWriteLock(lockName).ReadLock() // each reader its own owner
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Lock(ctx); err != nil {
				errs <- fmt.Errorf("reader-%d: %w", i, err)
				return
			}
			if inside.Add(1) == readers {
				fmt.Printf("%d readers hold the read lock together\n", readers)
				close(allIn)
			}
			select {
			case <-allIn:
				time.Sleep(read)
			case <-ctx.Done(): // the read lock was not shared
			}
			inside.Add(-1)
			errs <- r.Unlock(ctx)
		}()
	}
	select {
	case <-allIn:
	case <-time.After(2 * time.Second):
		return errors.New("the readers did not hold the read lock together")
	}

	w := c.ReadWriteLock(lockName).WriteLock()
	fmt.Println("writer waits for the readers to leave")
	if err := w.Lock(ctx); err != nil {
		return err
	}
	if n := inside.Load(); n != 0 {
		return fmt.Errorf("writer acquired the lock with %d readers inside", n)
	}
	fmt.Println("writer acquired the write lock: no reader inside")

	late := c.ReadWriteLock(lockName).ReadLock()
	ok, err := late.TryLock(ctx)
	if err != nil {
		return err
	}
	if ok {
		return errors.New("a reader got in while the writer held the lock")
	}
	fmt.Println("late reader's TryLock: false while the writer holds it")

	if err := w.Unlock(ctx); err != nil {
		return err
	}
	fmt.Println("writer released it")
	if ok, err = late.TryLock(ctx); err != nil || !ok {
		return errors.Join(errors.New("late reader could not get in after the writer left"), err)
	}
	fmt.Println("late reader's TryLock: true")
	if err := late.Unlock(ctx); err != nil {
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
	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Println("done: readers together, the writer alone")
	return nil
}
