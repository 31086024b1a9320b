// Command example elects a leader among three candidates, each with its
// own warden Client as if on three machines. An observer prints every
// leader as it is elected. Each leader writes to a store with its term's
// fencing token, then steps down: the first resigns, the second's Client
// closes as if its process died, which frees the leadership within the
// watchdog timeout (1s here).
//
// From the repository's root:
//
//	go run ./election/example
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	"github.com/warden-go/warden/internal/exampleredis"
)

const name = "example:leader"

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(30*time.Second, demo) }

// store is what the leaders write to: it refuses a write whose token is
// older than one it accepted, so a deposed leader cannot overwrite its
// successor's work.
type store struct {
	mu      sync.Mutex
	highest int64
}

func (s *store) write(token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("token %d is older than %d", token, s.highest)
	}
	s.highest = token
	return nil
}

func demo(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error {
	// What the election leaves: its lock (gone after the last
	// resignation), the leader's record and the fencing token counter.
	defer rdb.Del(context.Background(), name, "warden_election:{"+name+"}", "redisson_lock_token:{"+name+"}")

	// The observer prints every leader, in the order of their terms.
	watcher, err := election.New(c, name)
	if err != nil {
		return err
	}
	octx, stopObserving := context.WithCancel(ctx)
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for leader := range watcher.Observe(octx) {
			fmt.Printf("observed: %s leads (term %d)\n", leader.Value, leader.Token)
		}
	}()
	defer func() { stopObserving(); <-observed }()

	var s store
	var terms atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, who := range []string{"A", "B", "C"} {
		cc, err := client.New(rdb, client.WithWatchdogTimeout(time.Second))
		if err != nil {
			return err
		}
		defer func() { _ = cc.Close(context.Background()) }()
		e, err := election.New(cc, name)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- lead(ctx, cc, e, who, &terms, &s)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	// Let the observer see the last term before it stops.
	time.Sleep(100 * time.Millisecond)
	return nil
}

// lead campaigns as who, writes with the term's token, and steps down:
// the first leader resigns, the second closes its Client (as a process
// that dies would), the third resigns.
func lead(ctx context.Context, c *client.Client, e *election.Election, who string, terms *atomic.Int32, s *store) error {
	if err := e.Campaign(ctx, who); err != nil {
		return err
	}
	token := e.Token()
	if err := s.write(token); err != nil {
		return err
	}
	fmt.Printf("%s: elected, wrote with token %d\n", who, token)
	time.Sleep(200 * time.Millisecond) // the leader's work
	if terms.Add(1) == 2 {
		lost := e.Lost() // this term's: taken before Close ends it
		start := time.Now()
		if err := c.Close(ctx); err != nil {
			return err
		}
		<-lost
		fmt.Printf("%s: Client closed; leadership lost after %v\n", who, time.Since(start).Round(100*time.Millisecond))
		return nil
	}
	fmt.Printf("%s: resigns\n", who)
	return e.Resign(ctx)
}
