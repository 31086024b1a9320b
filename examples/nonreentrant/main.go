// Command nonreentrant shows warden's non-reentrant lock and lease
// extension: a job whose nested step asks for the lock its caller already
// holds is told so at once (ErrAlreadyHeld) instead of entering it again;
// and a job that finds it needs longer than its fixed lease extends it,
// so that the lock, and its Lost notification, follow the new lease.
//
//	go run ./examples/nonreentrant
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

const (
	lockName = "nonreentrant:report"
	lease    = 300 * time.Millisecond // the job's first guess
	extended = 2 * time.Second        // what it turns out to need
	work     = 600 * time.Millisecond // longer than the first guess
)

func main() { exampleredis.Main(run) }

func run() error {
	return exampleredis.Run(10*time.Second, func(ctx context.Context, c *client.Client, _ redis.UniversalClient) error {
		job := c.NonReentrantLock(lockName)
		other := c.NonReentrantLock(lockName) // another worker: another owner

		// A holder that asks again is refused at once: no second hold.
		if err := job.LockLease(ctx, lease); err != nil {
			return err
		}
		err := job.Lock(ctx)
		if !errors.Is(err, client.ErrAlreadyHeld) {
			return fmt.Errorf("the holder's second Lock: %v, want ErrAlreadyHeld", err)
		}
		n, err := job.HoldCount(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("the job's nested Lock: %v (hold count still %d)\n", client.ErrAlreadyHeld, n)

		// The work takes longer than the lease: extend it.
		if err := job.Extend(ctx, extended); err != nil {
			return err
		}
		fmt.Printf("extended the %v lease to %v\n", lease, extended)
		lost := job.Lost()
		time.Sleep(work)
		select {
		case <-lost:
			return errors.New("the holding was lost at its first lease's end")
		default:
		}
		ok, err := other.TryLock(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("after %v (past the first lease): still held, the other worker's TryLock: %t\n", work, ok)
		if ok {
			return errors.New("the other worker took the lock past the first lease")
		}

		// One Unlock frees it: the count was always 1.
		if err := job.Unlock(ctx); err != nil {
			return err
		}
		if ok, err = other.TryLock(ctx); err != nil || !ok {
			return fmt.Errorf("the other worker, after the unlock: %t, %v", ok, err)
		}
		fmt.Println("one Unlock freed it: the other worker holds it now")
		return other.Unlock(ctx)
	})
}
