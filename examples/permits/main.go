// Command permits shows warden's permit-expirable semaphore: worker-A takes
// its only permit with a short lease and stalls; the permit expires and is
// handed over to worker-B, who was waiting; A's late TryRelease then fails.
//
//	go run ./examples/permits
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
	"github.com/warden-go/warden/redisio"
)

const (
	semName = "permits:report"
	lease   = 300 * time.Millisecond
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

func demo(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error {
	// A semaphore lives on in Redis: start each run from a fresh one
	// (Delete removes its count and its permits' leases).
	sem := c.PermitExpirableSemaphore(semName)
	if _, err := sem.Delete(ctx); err != nil {
		return err
	}
	// It has no TTL either: delete it at the end, so the example leaves
	// nothing behind in your Redis.
	defer deleteKeys(rdb, semName, redisio.PermitTimeoutKey(semName))
	if err := sem.SetPermits(ctx, 1); err != nil {
		return err
	}

	// worker-A takes the permit and stalls past its lease; worker-B waits
	// for it. Once B has it, A wakes up and tries to give it back.
	type result struct {
		id     string
		waited time.Duration
		ok     bool // A's late TryRelease
		err    error
	}
	tookA, gotB := make(chan result, 1), make(chan result, 1)
	handedOver := make(chan struct{})
	lateRelease := make(chan result, 1)
	go func() {
		id, err := sem.Acquire(ctx, lease)
		tookA <- result{id: id, err: err}
		if err != nil {
			return
		}
		select { // stalls
		case <-handedOver:
		case <-ctx.Done():
		}
		ok, err := sem.TryRelease(ctx, id)
		lateRelease <- result{ok: ok, err: err}
	}()
	a := <-tookA
	if a.err != nil {
		return fmt.Errorf("worker-A: %w", a.err)
	}
	left, err := sem.RemainLease(ctx, a.id)
	if err != nil || left <= 0 || left > lease {
		return errors.Join(fmt.Errorf("worker-A's permit has %v left of its %v lease", left, lease), err)
	}
	fmt.Printf("worker-A took permit %s… for %v, then stalls\n", a.id[:8], lease)
	go func() {
		start := time.Now()
		id, err := sem.Acquire(ctx, 0) // no lease: B releases it itself
		gotB <- result{id: id, waited: time.Since(start), err: err}
	}()
	b := <-gotB
	close(handedOver)
	late := <-lateRelease
	if b.err != nil || late.err != nil {
		return errors.Join(b.err, late.err)
	}
	if b.id == a.id || b.waited < lease/2 {
		return fmt.Errorf("worker-B got permit %s after %v, before A's lease ran out", b.id, b.waited)
	}
	fmt.Printf("worker-B waited, then got permit %s… when A's lease ran out\n", b.id[:8])
	if left, err := sem.RemainLease(ctx, b.id); err != nil || left != -1 {
		return errors.Join(fmt.Errorf("worker-B's permit has %v left, want -1 (no lease)", left), err)
	}
	if _, err := sem.RemainLease(ctx, a.id); !errors.Is(err, client.ErrNotHeld) {
		return fmt.Errorf("worker-A's expired permit: RemainLease says %v, want ErrNotHeld", err)
	}
	if late.ok {
		return errors.New("worker-A released a permit that had expired")
	}
	fmt.Println("worker-A wakes up: its late TryRelease returns false")

	if err := sem.Release(ctx, b.id); err != nil {
		return err
	}
	if n, err := sem.AvailablePermits(ctx); err != nil || n != 1 {
		return errors.Join(fmt.Errorf("%d permits available at the end, want 1", n), err)
	}
	fmt.Println("worker-B released its permit: 1 available")
	if ok, err := sem.Delete(ctx); err != nil || !ok {
		return errors.Join(errors.New("could not delete the semaphore"), err)
	}

	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Println("done: the expired permit went to B, and A could not release it")
	return nil
}

// deleteKeys deletes keys, even after the demo's context ended.
func deleteKeys(rdb redis.UniversalClient, keys ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, k := range keys { // one by one: on a cluster they may be in different slots
		if err := rdb.Del(ctx, k).Err(); err != nil {
			fmt.Println("could not delete", k, err)
		}
	}
}
