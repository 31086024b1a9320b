package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// One owner's read lock held both in watchdog mode and with an explicit
// lease: the renewer keeps the owner's holds alive as long as one of them
// is in watchdog mode, whichever was taken last. Unlocking the newer,
// explicit hold leaves the watchdog hold held (renewed) in Redis, not a
// hold whose timeout key stopped being renewed when the explicit hold
// came (Redis would then drop the lock at the unlock, while its owner
// believes it holds the lock until the explicit lease ends).
func TestReadLockWatchdogHoldOutlivesAnExplicitReentry(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "read-mixed-watchdog"
	read := e.newClient(t).ReadWriteLock(name).ReadLock()
	require.NoError(t, read.Lock(ctx))                      // watchdog mode (1 s)
	require.NoError(t, read.LockLease(ctx, 10*time.Second)) // reentry with an explicit lease
	lost := read.Lost()
	time.Sleep(2 * watchdog) // past the watchdog hold's first TTL
	require.NoError(t, read.Unlock(ctx))

	writer := e.newClient(t).ReadWriteLock(name).WriteLock()
	for range 3 {
		require.EqualValues(t, 1, get(t, read.HoldCount), "the watchdog hold is still held")
		require.False(t, tryLock(t, writer), "another process cannot write while the read is held")
		pttl := e.rdb.PTTL(ctx, name).Val()
		assert.Greater(t, pttl, time.Duration(0), "the lock hash has a TTL")
		assert.LessOrEqual(t, pttl, watchdog, "the lock lives by the watchdog now, not the explicit lease")
		select {
		case <-lost:
			t.Fatal("the owner was told it lost a read lock it holds")
		default:
		}
		time.Sleep(watchdog) // renewals keep it
	}
	require.NoError(t, read.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the last read unlock frees the lock")
}

// The other way round: an explicit-lease read hold, then a watchdog-mode
// reentry. While the watchdog hold is held the renewer keeps both alive,
// the explicit one past its lease; once the watchdog hold is unlocked the
// owner holds the explicit one until its lease ends, is told then, and
// the hold Redis kept longer is given back rather than left to its TTL.
func TestReadLockExplicitHoldRenewedByAWatchdogReentryIsGivenBack(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const (
		name  = "read-mixed-explicit"
		lease = 2500 * time.Millisecond
	)
	read := e.newClient(t).ReadWriteLock(name).ReadLock()
	start := time.Now()
	require.NoError(t, read.LockLease(ctx, lease))
	require.NoError(t, read.Lock(ctx)) // watchdog mode (1 s): renewals every 333 ms
	lost := read.Lost()
	time.Sleep(lease - 700*time.Millisecond)
	require.NoError(t, read.Unlock(ctx)) // the watchdog hold goes; the renewals stop
	// The explicit hold's timeout key was renewed to the watchdog's TTL by
	// the last renewal: it would outlive the lease by up to a second.
	select {
	case <-lost:
		t.Fatal("told before the explicit lease ended")
	default:
	}
	await.Value(t, lost, time.Until(start.Add(lease+2*time.Second)), "told when the explicit lease ended")
	told := time.Since(start)
	assert.GreaterOrEqual(t, told, lease-50*time.Millisecond, "told at the lease's end")
	eventually(t, time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 },
		"the hold Redis kept longer is given back")
	t.Logf("told %v after the acquire (lease %v); lock gone %v after it", told.Round(time.Millisecond), lease,
		time.Since(start).Round(time.Millisecond))
}

// A read hold taken under the owner's own write lock (a downgrade) ends
// with its lease, but the hash lives as long as the write hold made it:
// when the owner is told, its read hold is given back, so other writers
// need not wait for the TTL the write side left.
func TestDowngradedReadHoldIsGivenBackAtItsEnd(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "downgrade-read-ends"
	rw := e.newClient(t).ReadWriteLock(name)
	require.NoError(t, rw.WriteLock().LockLease(ctx, 10*time.Second))
	start := time.Now()
	require.NoError(t, rw.ReadLock().LockLease(ctx, time.Second))
	lost := rw.ReadLock().Lost()
	require.NoError(t, rw.WriteLock().Unlock(ctx)) // read mode now; the hash keeps the write's 10 s TTL
	await.Value(t, lost, 5*time.Second, "the read hold's end told")
	told := time.Since(start)
	eventually(t, time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 },
		"the read hold is given back when its owner is told, not left to the write's TTL")
	t.Logf("told %v after the read acquire (lease 1s); lock gone %v after it", told.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
	assert.True(t, tryLock(t, e.newClient(t).ReadWriteLock(name).WriteLock()), "another process writes")
}

// A zombie reader: a client takes a read lock in watchdog mode and is
// closed without unlocking (Close releases nothing). Nobody renews the
// hold any more, so it ends with its TTL, the watchdog timeout, and a
// writer of another client, refused until then, gets in.
func TestReadHoldOfAClosedClientExpiresForAWriter(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "rw-zombie-reader"
		zombie := e.newClient(t)
		read := zombie.ReadWriteLock(name).ReadLock()
		require.NoError(t, read.Lock(ctx))
		timeoutKey := redisio.ReadTimeoutPrefix(name, read.Owner()) + ":1"
		e.advance(watchdog) // renewed meanwhile
		e.close(t, zombie)

		assert.Equal(t, "read", e.rdb.HGet(ctx, name, "mode").Val(), "the closed client's read hold is left behind")
		assert.Equal(t, int64(1), e.rdb.Exists(ctx, timeoutKey).Val())
		writer := e.newClient(t).ReadWriteLock(name).WriteLock()
		assert.False(t, tryLock(t, writer), "refused while the read hold's TTL lasts")
		got := inBackground(t, writer.Lock)
		r, took := awaitWhileTime(t, e, got, 5*watchdog, "the writer once the read hold's TTL ran out")
		require.NoError(t, r.err)
		assert.LessOrEqual(t, took, watchdog+time.Second, "in within the watchdog timeout of the last renewal")

		assert.Equal(t, 1, get(t, writer.HoldCount))
		assert.Equal(t, "write", e.rdb.HGet(ctx, name, "mode").Val())
		assert.False(t, e.rdb.HExists(ctx, name, read.Owner()).Val(), "the zombie's read field went with the hash")
		assert.Zero(t, e.rdb.Exists(ctx, timeoutKey).Val(), "its timeout key expired too")
		require.NoError(t, writer.Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}
