package client_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/warden-go/warden/client"
)

// Inspect tells who holds a lock; it only reads, and needs no Client.
func ExampleInspect() {
	c, rdb, stop := exampleClientRedis(client.WithClientID("billing-1"))
	defer stop()
	ctx := context.Background()

	lock := c.Lock("order:42", client.WithOwner("billing-1:7"))
	if err := lock.LockLease(ctx, time.Minute); err != nil {
		panic(err)
	}
	o, err := client.Inspect(ctx, rdb, "order:42")
	if err != nil {
		panic(err)
	}
	fmt.Println(o.Kind, o.TTL > 0)
	for _, h := range o.Holders {
		fmt.Println(h.Owner, h.ClientID, h.Count)
	}
	// Output:
	// lock true
	// billing-1:7 billing-1 1
}

// Scan streams every object of the lock family whose name matches a glob.
func ExampleScan() {
	c, rdb, stop := exampleClientRedis()
	defer stop()
	ctx := context.Background()

	for _, name := range []string{"order:1", "order:2"} {
		if err := c.Lock(name).LockLease(ctx, time.Minute); err != nil {
			panic(err)
		}
	}
	if _, err := c.Semaphore("order:slots").TrySetPermits(ctx, 0); err != nil {
		panic(err)
	}
	var lines []string
	for o, err := range client.Scan(ctx, rdb, "order:*") {
		if err != nil {
			panic(err)
		}
		lines = append(lines, fmt.Sprint(o.Name, " ", o.Kind, " ", len(o.Holders)))
	}
	slices.Sort(lines) // SCAN's order is Redis's
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// order:1 lock 1
	// order:2 lock 1
	// order:slots semaphore 0
}
