package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-go/warden/client"
)

// A SpinLock's waiters poll Redis with back-off instead of subscribing to
// the lock's channel, and its unlock publishes nothing: no pub/sub
// traffic, which a Redis Cluster broadcasts to every node.
func ExampleClient_SpinLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	holder := c.SpinLock("inventory:7")
	waiter := c.SpinLock("inventory:7", client.WithConstantBackOff(10*time.Millisecond))
	_ = holder.Lock(ctx)
	ok, _ := waiter.TryLock(ctx)
	fmt.Println("waiter's TryLock while held:", ok)

	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }() // polls every 10ms until free
	_ = holder.Unlock(ctx)
	fmt.Println("waiter's Lock after the unlock:", received(got))
	_ = waiter.Unlock(ctx)
	// Output:
	// waiter's TryLock while held: false
	// waiter's Lock after the unlock: <nil>
}
