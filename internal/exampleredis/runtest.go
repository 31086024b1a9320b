package exampleredis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/warden-go/warden/internal/redistest"
)

// retryLatches are the prefixes of the keys warden keeps for a retry
// window after a call (each with a TTL of seconds): all an example may
// leave behind.
var retryLatches = []string{"redisson_unlock_latch:", "warden_unlock:", "warden_acquire_latch:", "warden_latch:", "warden_gaveup:"}

// TestRun runs an example's run twice: on the embedded Redis and on a real
// redis-server started for the test (REDIS_ADDR). On the redis-server it
// then checks that the example cleaned up what it made: what is left is
// only warden's retry-window keys, each expiring by itself.
func TestRun(t *testing.T, run func() error) {
	t.Run("embedded", func(t *testing.T) {
		t.Setenv("REDIS_ADDR", "")
		if err := run(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("redis-server", func(t *testing.T) {
		srv := redistest.Start(t)
		t.Setenv("REDIS_ADDR", srv.Addr())
		if err := run(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		rdb := srv.Client(t)
		keys, err := rdb.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			ttl, err := rdb.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			// A retry latch, or the record of a Client the example closed
			// while it held a lock (kept as long as that lock may live),
			// expires within a minute by itself.
			shortLived := isRetryLatch(k) || strings.HasPrefix(k, "warden_client:")
			if !shortLived || ttl <= 0 || ttl > time.Minute {
				t.Errorf("the example left key %q behind (PTTL %v)", k, ttl)
			}
		}
	})
}

func isRetryLatch(key string) bool {
	for _, p := range retryLatches {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
