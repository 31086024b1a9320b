package client_test

import (
	"context"
	"fmt"

	"github.com/warden-go/warden/client"
)

// refreshCache is code that needs mutual exclusion and does not care how
// it is had: it takes a client.Mutex, so any lock type will do.
func refreshCache(ctx context.Context, mu client.Mutex, what string) error {
	return mu.Do(ctx, func(ctx context.Context) error {
		// ctx is cancelled (cause client.ErrLockLost) if the lock is lost.
		fmt.Println("refreshing", what)
		return nil
	})
}

func ExampleMutex() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	rw := c.ReadWriteLock("cache:rw")
	locks := []struct {
		what string
		mu   client.Mutex
	}{
		{"under a lock", c.Lock("cache:plain")},
		{"under a fair lock", c.FairLock("cache:fair")},
		{"under a read lock", rw.ReadLock()},
		{"under a write lock", rw.WriteLock()},
		{"under a fenced lock", c.FencedLock("cache:fenced")},
		{"under a multilock", client.NewMultiLock(c.Lock("cache:a"), c.Lock("cache:b"))},
		// A RedLock's members belong on independent Redis masters; one
		// will do for the example.
		{"under a redlock", client.NewRedLock(c.Lock("cache:red"))},
	}
	for _, l := range locks {
		if err := refreshCache(ctx, l.mu, l.what); err != nil {
			fmt.Println("error:", err)
		}
	}

	// The same Mutex methods, without Do.
	var mu client.Mutex = c.Lock("cache:plain")
	if err := mu.Lock(ctx); err != nil {
		panic(err)
	}
	ok, _ := client.Mutex(c.Lock("cache:plain")).TryLock(ctx)
	fmt.Println("another owner got it:", ok)
	if err := mu.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// refreshing under a lock
	// refreshing under a fair lock
	// refreshing under a read lock
	// refreshing under a write lock
	// refreshing under a fenced lock
	// refreshing under a multilock
	// refreshing under a redlock
	// another owner got it: false
}
