package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-go/warden/client"
)

// TrySetPermitsTTL sets a semaphore that lives for a while: once its TTL
// runs out, it is gone with its permits, and may be set again.
func ExampleSemaphore_TrySetPermitsTTL() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.Semaphore("nightly-batch")
	ok, _ := sem.TrySetPermitsTTL(ctx, 3, time.Hour)
	fmt.Println("set:", ok)
	ok, _ = sem.TrySetPermitsTTL(ctx, 5, time.Hour)
	fmt.Println("set again:", ok)
	ttl, _ := sem.RemainTTL(ctx)
	fmt.Println("expires within the hour:", ttl > 59*time.Minute && ttl <= time.Hour)
	// Output:
	// set: true
	// set again: false
	// expires within the hour: true
}

// SetPermits sets the count whatever it was; a waiter the new count can
// serve is woken.
func ExampleSemaphore_SetPermits() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.Semaphore("workers")
	done := make(chan error, 1)
	go func() { done <- sem.Acquire(ctx, 4) }() // none available yet: it waits

	_ = sem.SetPermits(ctx, 6)
	fmt.Println("acquired:", received(done) == nil)
	n, _ := sem.AvailablePermits(ctx)
	fmt.Println("available:", n)
	// Output:
	// acquired: true
	// available: 2
}

// ReleaseIfExists gives permits back only to a semaphore that still
// exists: a late release does not bring back one that expired or was
// deleted.
func ExampleSemaphore_ReleaseIfExists() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.Semaphore("exports")
	_, _ = sem.TrySetPermits(ctx, 1)
	_ = sem.Acquire(ctx, 1)
	ok, _ := sem.ReleaseIfExists(ctx, 1)
	fmt.Println("released:", ok)

	_, _ = sem.Delete(ctx)
	ok, _ = sem.ReleaseIfExists(ctx, 1)
	fmt.Println("released after Delete:", ok)
	n, _ := sem.RemainTTL(ctx)
	fmt.Println("exists:", n != -2)
	// Output:
	// released: true
	// released after Delete: false
	// exists: false
}

// ReleasePermits gives several permits back in one call, all or none.
func ExamplePermitExpirableSemaphore_ReleasePermits() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.PermitExpirableSemaphore("crawlers")
	_ = sem.SetPermits(ctx, 3)
	a, _ := sem.Acquire(ctx, time.Minute)
	b, _ := sem.Acquire(ctx, time.Minute)
	held, _ := sem.AcquiredPermits(ctx)
	fmt.Println("held:", held)

	_ = sem.ReleasePermits(ctx, a, b)
	held, _ = sem.AcquiredPermits(ctx)
	fmt.Println("held after ReleasePermits:", held)
	err := sem.ReleasePermits(ctx, a, b)
	fmt.Println("again:", errors.Is(err, client.ErrNotHeld))
	// Output:
	// held: 2
	// held after ReleasePermits: 0
	// again: true
}

// RemainLease tells a permit's holder how long it still has.
func ExamplePermitExpirableSemaphore_RemainLease() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.PermitExpirableSemaphore("renders")
	_ = sem.SetPermits(ctx, 2)
	id, _ := sem.Acquire(ctx, time.Minute)
	left, _ := sem.RemainLease(ctx, id)
	fmt.Println("under a minute left:", left > 0 && left <= time.Minute)

	forever, _ := sem.Acquire(ctx, 0)
	left, _ = sem.RemainLease(ctx, forever)
	fmt.Println("a permit without a lease:", left)

	_ = sem.Release(ctx, id)
	_, err := sem.RemainLease(ctx, id)
	fmt.Println("after release:", errors.Is(err, client.ErrNotHeld))
	_ = sem.Release(ctx, forever)
	// Output:
	// under a minute left: true
	// a permit without a lease: -1ns
	// after release: true
}

// SetPermits counts held permits in: lowering the number below what is
// held leaves none available until enough are released.
func ExamplePermitExpirableSemaphore_SetPermits() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.PermitExpirableSemaphore("gpus")
	_ = sem.SetPermits(ctx, 4)
	a, _ := sem.Acquire(ctx, 0)
	b, _ := sem.Acquire(ctx, 0)

	_ = sem.SetPermits(ctx, 1)
	total, _ := sem.Permits(ctx)
	avail, _ := sem.AvailablePermits(ctx)
	fmt.Println("permits:", total, "available:", avail)

	_ = sem.ReleasePermits(ctx, a, b)
	avail, _ = sem.AvailablePermits(ctx)
	fmt.Println("available once released:", avail)
	// Output:
	// permits: 1 available: -1
	// available once released: 1
}

// Delete removes a latch and releases its waiters: a missing latch counts
// zero.
func ExampleCountDownLatch_Delete() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	latch := c.CountDownLatch("migration")
	_, _ = latch.TrySetCount(ctx, 3)
	done := make(chan error, 1)
	go func() { done <- latch.Await(ctx) }()

	deleted, _ := latch.Delete(ctx)
	fmt.Println("deleted:", deleted)
	fmt.Println("the waiter went:", received(done) == nil)
	// Output:
	// deleted: true
	// the waiter went: true
}

// AcquirePermits takes several permits in one call, all or none, each
// with its own ID and the same lease.
func ExamplePermitExpirableSemaphore_AcquirePermits() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.PermitExpirableSemaphore("shards")
	_ = sem.SetPermits(ctx, 4)
	ids, _ := sem.AcquirePermits(ctx, 3, time.Minute)
	fmt.Println("took:", len(ids))

	more, ok, _ := sem.TryAcquirePermits(ctx, 2, 0, time.Minute)
	fmt.Println("two more:", ok, more)
	avail, _ := sem.AvailablePermits(ctx)
	fmt.Println("available:", avail)

	_ = sem.ReleasePermits(ctx, ids...)
	// Output:
	// took: 3
	// two more: false []
	// available: 1
}
