package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// downgradeReadLease is the read hold's lease in the downgrade tests: far
// longer than the watchdog and everything the tests wait for.
const downgradeReadLease = 10 * time.Second

// downgraded takes the read/write lock name on real Redis for writing in
// watchdog mode, then for reading with downgradeReadLease (a downgrade).
func downgraded(t *testing.T, name string) (*env, *client.ReadWriteLock) {
	t.Helper()
	ctx := testCtx(t)
	e := realEnv(t)
	rw := e.newClient(t).ReadWriteLock(name)
	require.NoError(t, rw.WriteLock().Lock(ctx))
	require.NoError(t, rw.ReadLock().LockLease(ctx, downgradeReadLease))
	return e, rw
}

// assertReadHoldSurvives checks, once the watchdog and a margin have passed
// since the write side's last unlock, that the owner's read hold is still
// in Redis, keeps another owner's writer out, and was not reported lost.
func assertReadHoldSurvives(t *testing.T, e *env, rw *client.ReadWriteLock) {
	t.Helper()
	ctx := testCtx(t)
	name := rw.ReadLock().Name()
	lost := rw.ReadLock().Lost()
	e.advance(watchdog + 500*time.Millisecond)

	assert.Equal(t, int64(1), e.rdb.Exists(ctx, name).Val(), "the lock hash outlives the write lease")
	n, err := redisio.ReadHoldCount(ctx, e.rdb, name, rw.ReadLock().Owner())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the read hold is still in Redis")
	assert.Positive(t, e.rdb.PTTL(ctx, name).Val(), "the hash keeps a TTL")
	other := e.newClient(t).ReadWriteLock(name)
	assert.False(t, tryLock(t, other.WriteLock()), "another owner cannot write while the read hold lasts")
	select {
	case <-lost:
		t.Fatal("the read holding was reported lost")
	default:
	}
	require.NoError(t, rw.ReadLock().Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the last unlock frees the lock")
}

// A write holder that also reads (a downgrade) and releases one of two
// write holds must not cut its longer read hold: the unlock sets the hash
// to the write lease, but never below the longest read hold.
func TestDowngradeWriteUnlockKeepsTheLongerReadHold(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	e, rw := downgraded(t, "rw-downgrade-unlock")
	require.NoError(t, rw.WriteLock().Lock(ctx))
	require.NoError(t, rw.WriteLock().Unlock(ctx))
	assert.Greater(t, e.rdb.PTTL(ctx, rw.ReadLock().Name()).Val(), downgradeReadLease-2*time.Second,
		"the write unlock left the read hold's TTL")
	require.NoError(t, rw.WriteLock().Unlock(ctx))
	assertReadHoldSurvives(t, e, rw)
}

// The watchdog's renewal of a write hold must not cut the owner's longer
// read hold either: a write hold of a read/write lock only raises the TTL.
func TestDowngradeWriteRenewalKeepsTheLongerReadHold(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	e, rw := downgraded(t, "rw-downgrade-renew")
	e.advance(watchdog + watchdog/3) // three or four renewals of the write hold
	held, err := rw.WriteLock().IsHeld(ctx)
	require.NoError(t, err)
	require.True(t, held, "the watchdog keeps the write hold")
	assert.Greater(t, e.rdb.PTTL(ctx, rw.ReadLock().Name()).Val(), downgradeReadLease-3*time.Second,
		"the renewals left the read hold's TTL")
	require.NoError(t, rw.WriteLock().Unlock(ctx))
	assertReadHoldSurvives(t, e, rw)
}

// Readers waiting while a writer holds the lock are woken when the writer,
// which also reads, releases its write: the lock is then in read mode and
// they share it, rather than waiting for the writer's read unlock or the
// lock's TTL (a downgrade publishes the write unlock's wake-all message).
func TestDowngradeWakesWaitingReaders(t *testing.T) {
	e, rw := downgraded(t, "downgrade-wakes-readers")
	ctx := testCtx(t)
	const readers = 3
	waits := make([]func(context.Context) error, readers)
	for i := range waits {
		r := e.newClient(t).ReadWriteLock(rw.ReadLock().Name()).ReadLock()
		waits[i] = func(ctx context.Context) error {
			if err := r.Lock(ctx); err != nil {
				return err
			}
			return r.Unlock(ctx)
		}
	}
	channel := redisio.RWChannel(rw.ReadLock().Name())
	listening := func() bool { return e.rdb.PubSubNumSub(ctx, channel).Val()[channel] >= readers }
	for _, woke := range wokenAll(t, waits, listening, rw.WriteLock().Unlock) {
		assert.GreaterOrEqual(t, woke, time.Duration(0), "no reader while the write is held")
		assert.Less(t, woke, 500*time.Millisecond, "woken by the downgrade, not by a TTL or a later unlock")
	}
	require.NoError(t, rw.ReadLock().Unlock(ctx))
}
