package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// A NonReentrantLock refuses its holder: a second acquire by the owner
// that holds it fails at once with ErrAlreadyHeld, without waiting and
// without a second hold, so one Unlock frees it. Other owners wait for it
// as for a Lock.
func ExampleClient_NonReentrantLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lock := c.NonReentrantLock("invoice:7")
	_ = lock.Lock(ctx)
	err := lock.Lock(ctx) // the holder again: refused at once
	fmt.Println("second Lock:", errors.Is(err, client.ErrAlreadyHeld))
	ok, err := lock.TryLock(ctx)
	fmt.Println("TryLock:", ok, errors.Is(err, client.ErrAlreadyHeld))
	n, _ := lock.HoldCount(ctx)
	fmt.Println("holds:", n)

	_ = lock.Unlock(ctx)
	locked, _ := lock.IsLocked(ctx)
	fmt.Println("locked after one unlock:", locked)
	// Output:
	// second Lock: true
	// TryLock: false true
	// holds: 1
	// locked after one unlock: false
}

// A NonReentrantFairLock hands the lock on in the order the waiters asked,
// as a FairLock does, and refuses its holder's second acquire, which takes
// no place in the queue.
func ExampleClient_NonReentrantFairLock() {
	c, rdb, stop := exampleClientRedis()
	defer stop()
	ctx := context.Background()

	first := c.NonReentrantFairLock("payout")
	_ = first.Lock(ctx)
	fmt.Println("first again:", errors.Is(first.Lock(ctx), client.ErrAlreadyHeld))

	second := c.NonReentrantFairLock("payout")
	got := make(chan error, 1)
	go func() { got <- second.Lock(ctx) }()
	waitFor(func() bool { return rdb.LLen(ctx, redisio.FairQueueKey("payout")).Val() == 1 }) // queued
	_ = first.Unlock(ctx)
	fmt.Println("second took it:", received(got) == nil)
	_ = second.Unlock(ctx)
	// Output:
	// first again: true
	// second took it: true
}

// Extend gives a fixed-lease holding a new lease from now: the lock, and
// the holding's Lost channel, follow it instead of the first lease.
func ExampleLock_Extend() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lock := c.Lock("export:nightly")
	_ = lock.LockLease(ctx, 2*time.Second)
	if err := lock.Extend(ctx, time.Minute); err != nil {
		panic(err)
	}
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println("lease now over 50s:", ttl > 50*time.Second)

	other := c.Lock("export:nightly")
	fmt.Println("another owner extends:", errors.Is(other.Extend(ctx, time.Minute), client.ErrNotHeld))

	watchdog := c.Lock("export:hourly")
	_ = watchdog.Lock(ctx) // renewed by the watchdog: no lease to extend
	fmt.Println("watchdog holding:", errors.Is(watchdog.Extend(ctx, time.Minute), client.ErrInvalidArgument))

	_ = lock.Unlock(ctx)
	_ = watchdog.Unlock(ctx)
	// Output:
	// lease now over 50s: true
	// another owner extends: true
	// watchdog holding: true
}
