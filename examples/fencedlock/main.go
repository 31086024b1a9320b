// Command fencedlock shows warden's fenced lock: a holder paused past its
// lease loses the lock to a second worker, and the storage the lock
// protects refuses the paused holder's late write because its fencing
// token is older than one it has already accepted.
//
//	go run ./examples/fencedlock
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
	"github.com/warden-go/warden/redisio"
)

const (
	lockName = "fenced:report"
	lease    = 300 * time.Millisecond
	pause    = 2 * lease // the first holder's "GC pause", longer than its lease
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(10*time.Second, demo) }

// storage is the protected resource: it remembers the highest token it
// accepted and refuses a write that carries a lower one.
type storage struct {
	mu      sync.Mutex
	highest int64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *storage) write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("%w: %d < %d", errStaleToken, token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}

func demo(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error {
	// Clear what an interrupted run may have left (the token counter is
	// kept: tokens only ever grow).
	if err := rdb.Del(ctx, lockName).Err(); err != nil {
		return err
	}
	// The counter has no TTL. A real application keeps it for good
	// (deleting it would start the tokens again at 1, below what its
	// resources have seen); this example deletes the one it made, so it
	// leaves nothing behind in your Redis.
	tokens := redisio.TokenKey(lockName)
	made, err := rdb.Exists(ctx, tokens).Result()
	if err != nil {
		return err
	}
	if made == 0 { // absent: this run makes it
		defer deleteKeys(rdb, tokens)
	}
	var store storage

	slow := c.FencedLock(lockName)
	t1, ok, err := slow.TryLockToken(ctx, time.Second, lease)
	if err != nil || !ok {
		return errors.Join(errors.New("the first worker did not get the lock"), err)
	}
	fmt.Printf("worker-1 holds %s with token %d (lease %v), then pauses %v\n", lockName, t1, lease, pause)
	time.Sleep(pause)

	fast := c.FencedLock(lockName)
	t2, ok, err := fast.TryLockToken(ctx, time.Second, 0)
	if err != nil || !ok {
		return errors.Join(errors.New("the second worker did not get the expired lock"), err)
	}
	fmt.Printf("worker-2 holds %s with token %d and writes\n", lockName, t2)
	if err := store.write(t2, "from worker-2"); err != nil {
		return err
	}

	err = store.write(t1, "from worker-1")
	if !errors.Is(err, errStaleToken) {
		return fmt.Errorf("the paused worker's write was not refused: %v", err)
	}
	fmt.Printf("worker-1 wakes and writes with token %d: refused (%v)\n", t1, err)
	if err := slow.Unlock(ctx); !errors.Is(err, client.ErrNotHeld) {
		return fmt.Errorf("the paused worker's unlock: %v, want ErrNotHeld", err)
	}
	if err := fast.Unlock(ctx); err != nil {
		return err
	}
	if store.value != "from worker-2" || t2 <= t1 {
		return fmt.Errorf("storage holds %q (tokens %d then %d)", store.value, t1, t2)
	}
	counter, err := rdb.Get(ctx, tokens).Int64()
	if err != nil {
		return err
	}
	fmt.Printf("done: storage kept worker-2's write; %s = %d\n", tokens, counter)
	return nil
}

// deleteKeys deletes keys, even after the demo's context ended.
func deleteKeys(rdb redis.UniversalClient, keys ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		fmt.Println("could not delete", keys, err)
	}
}
