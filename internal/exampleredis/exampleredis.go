// Package exampleredis gives the example programs their Redis: the server
// at REDIS_ADDR when it is set, or else an embedded in-process miniredis
// whose TTLs follow the real clock, so the examples run on a machine with
// no Redis installed.
package exampleredis

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// Main runs an example's run and exits with status 1 if it fails.
func Main(run func() error) {
	if err := run(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

// Run gives body a context that ends after timeout, the Redis of Connect
// (its location printed) and a warden Client on it, and closes both when
// body returns.
func Run(timeout time.Duration, body func(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rdb, where, stopRedis, err := Connect(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()
	fmt.Println("redis:", where)
	c, err := client.New(rdb)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }() // ErrClosed when body closed it
	return body(ctx, c, rdb)
}

// Connect returns a client for the Redis at REDIS_ADDR, or else for an
// embedded miniredis; where says which, for printing; closeAll closes the
// client and stops the embedded server.
func Connect(ctx context.Context) (rdb redis.UniversalClient, where string, closeAll func(), err error) {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		c := redis.NewClient(&redis.Options{Addr: addr})
		if err := c.Ping(ctx).Err(); err != nil {
			_ = c.Close()
			return nil, "", nil, fmt.Errorf("redis at %s: %w", addr, err)
		}
		return c, addr + " (REDIS_ADDR)", func() { _ = c.Close() }, nil
	}

	mr, err := miniredis.Run()
	if err != nil {
		return nil, "", nil, err
	}
	// miniredis's TTLs move only when it is told to: advance them with the
	// real clock, so that a lock nobody renews expires as on a real server.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return c, "embedded miniredis at " + mr.Addr() + " (set REDIS_ADDR to use a server)", func() {
		_ = c.Close()
		close(stop)
		<-stopped
		mr.Close()
	}, nil
}
