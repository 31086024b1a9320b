package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// unlocks tells whether a script call is the unlock of a reentrant lock
// (three keys, the third the unlock record).
func unlocks(c redistest.ScriptCall) bool {
	return len(c.Keys) == 3 && strings.HasPrefix(c.Keys[2], "warden_unlock:")
}

// closed tells whether ch is closed now.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An Unlock that fails (here: the go-redis client was closed) leaves the
// holding not known released: Lost() keeps returning its channel, which
// closes when the lease, no longer renewed, has run out.
func TestFailedUnlockKeepsLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	const wd = 2 * time.Second
	c, _, closing := ownSystemClient(t, rdb, client.WithWatchdogTimeout(wd))
	ctx := testCtx(t)
	l := c.Lock("unlock-fails")
	require.NoError(t, l.Lock(ctx))
	before := l.Lost()
	require.NoError(t, rdb.Close())
	start := time.Now()
	err := l.Unlock(ctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, client.ErrNotHeld)
	after := l.Lost()
	assert.Equal(t, before, after, "Lost() after a failed Unlock is the holding's channel")
	assert.False(t, closed(after), "not lost while its lease may still run")
	await.Value(t, after, 3*wd, "Lost() after the failed Unlock")
	took := time.Since(start)
	t.Logf("Lost() closed %v after the failed Unlock (watchdog %v)", took.Round(time.Millisecond), wd)
	assert.LessOrEqual(t, took, wd+500*time.Millisecond, "within the watchdog timeout of the last renewal")
	closing.Store(true) // the engine's calls fail on the closed go-redis client
	require.NoError(t, c.Close(ctx))
}

// An Unlock that failed before reaching Redis leaves the lock held there,
// unrenewed: the handle still sees its holding (Lost() open until the
// lease runs out), and a Lock before then is a reentry of the same
// holding, renewed again, which two Unlocks release.
func TestFailedUnlockThenReentry(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	e.hooked = redistest.NewHooked(e.rdb)
	c := e.newClient(t, client.WithWatchdogTimeout(3*time.Second))
	ctx := testCtx(t)
	l := c.Lock("unlock-fails-reentry")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()
	refused := errors.New("refused by the test")
	e.hooked.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if unlocks(sc) {
			return redistest.Failed(refused)
		}
		return sc.Run()
	})
	require.ErrorIs(t, l.Unlock(ctx), refused)
	e.hooked.SetHook(nil)
	require.Equal(t, lost, l.Lost())
	n, err := l.HoldCount(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the failed unlock left the hold in Redis")

	require.NoError(t, l.Lock(ctx))
	n, err = l.HoldCount(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "a reentry")
	require.Equal(t, lost, l.Lost(), "the same holding")
	time.Sleep(4 * time.Second) // past the lease of the last renewal before the failed unlock
	assert.False(t, closed(lost), "renewed again after the reentry")
	ttl, err := l.RemainTTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Second, "renewed")
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.False(t, closed(lost), "released, not lost")
}

// An Unlock that Redis ran but whose answer was lost also fails; the
// holding, not known released, is reported lost when its lease would have
// run out, or at once when a later acquire of its owner's finds that Redis
// kept none of its holds: that acquire starts a new holding with a
// channel of its own.
func TestFailedUnlockThenFreshAcquire(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	e.hooked = redistest.NewHooked(e.rdb)
	c := e.newClient(t, client.WithWatchdogTimeout(3*time.Second))
	ctx := testCtx(t)
	l := c.Lock("unlock-applied-unanswered")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()
	dropped := errors.New("answer dropped by the test")
	e.hooked.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if unlocks(sc) {
			if err := sc.Run().Err(); err != nil {
				return redistest.Failed(err)
			}
			return redistest.Failed(dropped)
		}
		return sc.Run()
	})
	require.ErrorIs(t, l.Unlock(ctx), dropped)
	e.hooked.SetHook(nil)
	require.Equal(t, lost, l.Lost(), "not known released")
	require.False(t, closed(lost))

	require.NoError(t, l.Lock(ctx))
	await.Value(t, lost, 5*time.Second, "the old holding's Lost()")
	next := l.Lost()
	require.NotEqual(t, lost, next, "a new holding")
	assert.False(t, closed(next))
	require.NoError(t, l.Unlock(ctx))
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
}
