package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redisproc"
)

// TestCloseAndReleaseReleasesEveryHold: CloseAndRelease frees every lock
// its handles hold, however many times reentered and of every kind, wakes
// a waiter of another client, leaves another owner's read hold alone, and
// counts a holding already lost as no error; the Client is closed after.
func TestCloseAndReleaseReleasesEveryHold(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c, other := e.newClient(t), e.newClient(t)

		plain := c.Lock("car-plain")
		require.NoError(t, plain.Lock(ctx))
		require.NoError(t, plain.Lock(ctx)) // reentered
		require.NoError(t, c.FairLock("car-fair").LockLease(ctx, time.Hour))
		_, err := c.FencedLock("car-fenced").LockToken(ctx)
		require.NoError(t, err)
		rw := c.ReadWriteLock("car-rw")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		require.NoError(t, rw.ReadLock().Lock(ctx)) // the writer reads too
		require.NoError(t, c.ReadWriteLock("car-shared").ReadLock().Lock(ctx))
		otherReader := other.ReadWriteLock("car-shared").ReadLock()
		require.NoError(t, otherReader.Lock(ctx))
		gone := c.Lock("car-gone")
		require.NoError(t, gone.Lock(ctx))
		forced, err := other.Lock("car-gone").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, forced)

		waiter := inBackground(t, func(ctx context.Context) error { return other.Lock("car-plain").Lock(ctx) })
		eventually(t, 2*time.Second, func() bool {
			return len(e.rdb.PubSubChannels(ctx, "*car-plain*").Val()) == 1
		}, "the other client waits for car-plain")

		e.closing[c].Store(true)
		require.NoError(t, c.CloseAndRelease(ctx))

		for _, name := range []string{"car-fair", "car-fenced", "car-rw"} {
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "%s was released", name)
		}
		r := await.Value(t, waiter, 2*time.Second, "the other client's waiter, woken by the release")
		require.NoError(t, r.err)
		held, err := other.Lock("car-plain").IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, held, "the waiter holds car-plain")
		holds, err := otherReader.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, holds, "another owner's read hold is untouched")
		fields := e.rdb.HKeys(ctx, "car-shared").Val()
		assert.NotContains(t, fields, c.ReadWriteLock("car-shared").ReadLock().Owner())
		assert.Len(t, fields, 2, "mode and the other reader only")

		assert.ErrorIs(t, c.CloseAndRelease(ctx), client.ErrClosed, "closed once")
		assert.ErrorIs(t, c.Close(ctx), client.ErrClosed)
		assert.ErrorIs(t, plain.Lock(ctx), client.ErrClosed)
	})
}

// TestCloseAndReleaseReportsAFailedRelease: a release that fails (Redis is
// gone) is returned, and the Client still closes.
func TestCloseAndReleaseReportsAFailedRelease(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	require.NoError(t, c.Lock("car-down").LockLease(ctx, time.Hour))
	e.srv.Stop(t)
	e.closing[c].Store(true)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := c.CloseAndRelease(cctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "release car-down")
	assert.ErrorIs(t, c.Close(ctx), client.ErrClosed, "closed all the same")
}

// CloseAndRelease frees a lock for other processes even while this Client
// has waiters for it: the release does not hand it to one of them (each is
// answered ErrClosed), so nothing is left holding it until a lease ends.
func TestCloseAndReleaseGivesNoLockToItsOwnWaiters(t *testing.T) {
	t.Parallel()
	for _, k := range []struct {
		kind string
		make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
	}{
		{"lock", (*client.Client).Lock},
		{"fair", (*client.Client).FairLock},
		{"spin", (*client.Client).SpinLock},
	} {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			c := e.newClient(t)
			name := "close-release:" + k.kind
			require.NoError(t, k.make(c, name).Lock(ctx))
			errs := make(chan error, 4)
			for range 4 {
				go func() { errs <- k.make(c, name).Lock(ctx) }()
			}
			// Each waiter's first attempt is refused before it waits.
			eventually(t, 10*time.Second, func() bool { return evalshaCalls(t, e.rdb) >= 5 }, "four refused attempts")
			e.closing[c].Store(true)
			require.NoError(t, c.CloseAndRelease(ctx))
			for range 4 {
				select {
				case err := <-errs:
					assert.ErrorIs(t, err, client.ErrClosed)
				case <-time.After(10 * time.Second):
					t.Fatal("a waiter was not answered")
				}
			}
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the lock is free for other processes")
			assert.Empty(t, e.rdb.LRange(ctx, "redisson_lock_queue:{"+name+"}", 0, -1).Val(), "no place left in a queue")
		})
	}
}

// evalshaCalls is how many EVALSHA calls the server ran.
func evalshaCalls(t *testing.T, rdb *redis.Client) uint64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	rest, ok := redisproc.InfoFields(info)["cmdstat_evalsha"]
	if !ok {
		return 0
	}
	calls, _, err := redisproc.CommandStat(rest)
	require.NoError(t, err)
	return calls
}
