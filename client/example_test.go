package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// exampleRedis returns a Redis for the examples, an in-process miniredis,
// and a function that closes it. Real code passes its own go-redis client
// (single node, Sentinel or Cluster).
func exampleRedis() (*redis.Client, func()) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

// exampleClient returns a Client with opts on exampleRedis, and a
// function that closes both.
func exampleClient(opts ...client.Option) (*client.Client, func()) {
	c, _, stop := exampleClientRedis(opts...)
	return c, stop
}

// exampleClientRedis is exampleClient that also returns the Redis, for
// the examples that look at the keys.
func exampleClientRedis(opts ...client.Option) (*client.Client, *redis.Client, func()) {
	rdb, stop := exampleRedis()
	c, err := client.New(rdb, opts...)
	if err != nil {
		panic(err)
	}
	return c, rdb, func() { _ = c.Close(context.Background()); stop() }
}

func Example() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	c, err := client.New(rdb)
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)

	lock := c.Lock("order:42")
	if err := lock.Lock(ctx); err != nil { // waits; the watchdog renews it while held
		panic(err)
	}
	held, _ := lock.IsHeld(ctx)
	fmt.Println("held:", held)

	other := c.Lock("order:42") // another handle is another owner
	ok, _ := other.TryLock(ctx)
	fmt.Println("other got it:", ok)

	if err := lock.Unlock(ctx); err != nil {
		panic(err)
	}
	ok, _ = other.TryLock(ctx)
	fmt.Println("other got it after unlock:", ok)
	_ = other.Unlock(ctx)
	// Output:
	// held: true
	// other got it: false
	// other got it after unlock: true
}

func ExampleLock_Do() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	err := c.Lock("report:daily").Do(ctx, func(ctx context.Context) error {
		// ctx is cancelled with cause client.ErrLockLost if the lock is lost.
		fmt.Println("generating the report under the lock")
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// generating the report under the lock
	// err: <nil>
}

func ExampleLock_Unlock_notHeld() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	err := c.Lock("never-taken").Unlock(ctx)
	fmt.Println(errors.Is(err, client.ErrNotHeld))
	// Output: true
}

func ExampleLock_TryLockWait() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	holder := c.Lock("inventory")
	_ = holder.Lock(ctx)
	ok, err := c.Lock("inventory").TryLockWait(ctx, 50*time.Millisecond, time.Minute)
	fmt.Println(ok, err) // the wait ran out: false, and no error
	_ = holder.Unlock(ctx)
	// Output: false <nil>
}
