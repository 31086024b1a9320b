package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

func TestACLRulesRefuseABadGlob(t *testing.T) {
	t.Parallel()
	for _, names := range []string{"", "a b", "a\tb", "x[y", "x\\"} {
		_, err := client.ACLRules(names)
		require.ErrorIs(t, err, client.ErrInvalidArgument, "%q", names)
		assert.Contains(t, err.Error(), "names")
		_, err = client.ReadOnlyACLRules(names)
		require.ErrorIs(t, err, client.ErrInvalidArgument, "%q", names)
	}
}

// TestACLRulesForHashTaggedNames runs locks whose names carry a hash tag
// of their own as a user with exactly ACLRules of their glob: the
// auxiliary keys then follow the name without extra braces.
func TestACLRulesForHashTaggedNames(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	rules, err := client.ACLRules("{orders}:*")
	require.NoError(t, err)
	assert.Contains(t, rules, " ~redisson_lock_queue:{orders}:* ")
	assert.NotContains(t, rules, "_queue:{{") // (the latch channel braces the name whatever it holds)
	args := []any{"acl", "setuser", "tagged", "reset", "on", ">pw"}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	require.NoError(t, admin.Do(ctx, "acl", "log", "reset").Err())

	user := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "tagged", Password: "pw"})
	t.Cleanup(func() { _ = user.Close() })
	c, err := client.New(user, client.WithWatchdogTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close(context.Background())) })

	l := c.Lock("{orders}:1")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	f := c.FairLock("{orders}:2")
	require.NoError(t, f.Lock(ctx))
	require.NoError(t, f.Unlock(ctx))
	rw := c.ReadWriteLock("{orders}:3")
	require.NoError(t, rw.ReadLock().LockLease(ctx, time.Minute))
	require.NoError(t, rw.ReadLock().Unlock(ctx))
	p := c.PermitExpirableSemaphore("{orders}:4")
	set(t, p.TrySetPermits, 1)
	id, err := p.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	require.NoError(t, p.Release(ctx, id))
	d := c.CountDownLatch("{orders}:5")
	set(t, d.TrySetCount, 1)
	require.NoError(t, d.CountDown(ctx))
	require.NoError(t, d.Await(ctx))
	_, err = client.Inspect(ctx, user, "{orders}:4")
	require.NoError(t, err)
	entries, err := admin.Do(ctx, "acl", "log").Slice()
	require.NoError(t, err)
	var refused []any
	for _, e := range entries {
		// New's check of the eviction policy asks CONFIG GET, which the
		// rules do not allow (it reads secrets too): refused, and noted.
		if m, ok := e.(map[any]any); !ok || m["object"] != "config|get" {
			refused = append(refused, e)
		}
	}
	assert.Empty(t, refused, "nothing refused but New's CONFIG GET")

	_, err = c.Lock("orders:6").TryLock(ctx) // not under the glob
	require.ErrorContains(t, err, "NOPERM")
}
