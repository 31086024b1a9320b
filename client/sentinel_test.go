package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// failoverWatchdog is the watchdog of the holders that live through a
// failover. The renewer retries every third of it, so a lock is sure to
// survive a failover that takes less than a third of it (two thirds when,
// as here, the master dies right after the acquire). Failovers take about
// 1s here, with the sentinel's 500ms down-after.
const failoverWatchdog = 5 * time.Second

// sentinelEnv is an env on its own failover client of s, as one process
// of the deployment would have. Checks through e.rdb follow the master too.
func sentinelEnv(t *testing.T, s *redistest.Sentinel) *env {
	return &env{name: "sentinel", rdb: s.Client(t), clk: clockwork.NewRealClock()}
}

// requireOpen fails t if lost, a holding's Lost channel, is closed.
func requireOpen(t *testing.T, lost <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-lost:
		t.Fatal(msg)
	default:
	}
}

// The lock works unchanged on a failover client: reentry, exclusion,
// unlock, and a blocked waiter woken by the unlock message, whose pub/sub
// also goes through the sentinel-discovered master.
func TestSentinelLock(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	e := sentinelEnv(t, s)
	master := s.Master().Client(t)
	holderClient, waiterClient := e.newClient(t), sentinelEnv(t, s).newClient(t)
	holder, waiter := holderClient.Lock("sentinel-lock"), waiterClient.Lock("sentinel-lock")

	require.NoError(t, holder.LockLease(ctx, time.Minute), "a long lease: polling on the PTTL would take a minute")
	require.True(t, tryLock(t, holder), "the owner re-enters")
	assert.Equal(t, "2", master.HGet(ctx, "sentinel-lock", holder.Owner()).Val(), "on the master")
	require.False(t, tryLock(t, waiter), "another client is refused")
	require.NoError(t, holder.Unlock(ctx))
	assert.Equal(t, 1, get(t, holder.HoldCount))

	const channel = "redisson_lock__channel:{sentinel-lock}"
	woke := wokenBy(t, waiter.Lock, func() bool {
		return master.PubSubNumSub(ctx, channel).Val()[channel] == 1 // the waiter subscribes on the master
	}, holder.Unlock)
	assert.Less(t, woke, 2*time.Second, "woken by pub/sub, not by the minute-long lease")
	assert.False(t, tryLock(t, holder), "the woken waiter holds it")
	require.NoError(t, waiter.Unlock(ctx))
	assert.False(t, get(t, holder.IsLocked))
}

// With replica sync the acquire is on the replica when Lock returns, so a
// failover keeps it: the holder still holds it on the new master, others
// are refused, its renewal keeps it past the lease it had when the master
// died, and its unlock succeeds.
func TestSentinelFailoverKeepsASyncedLock(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	e := sentinelEnv(t, s)
	holderClient := e.newClient(t, client.WithWatchdogTimeout(failoverWatchdog), client.WithReplicaSync(1, time.Second))
	otherClient := sentinelEnv(t, s).newClient(t)
	holder, other := holderClient.Lock("synced-failover"), otherClient.Lock("synced-failover")

	require.NoError(t, holder.Lock(ctx))
	lost := holder.Lost()
	assert.Equal(t, "1", s.Replica().Client(t).HGet(ctx, "synced-failover", holder.Owner()).Val(),
		"on the replica when Lock returns")
	pttl := s.Master().Client(t).PTTL(ctx, "synced-failover").Val()
	require.Greater(t, pttl, time.Duration(0))
	killed := time.Now()
	oldLeaseEnd := killed.Add(pttl)
	s.KillMaster(t)
	took := s.WaitFailover(t, 10*time.Second)
	t.Logf("failover took %v; the lease at the kill had %v left", took, pttl)

	assert.Equal(t, "1", s.Master().Client(t).HGet(ctx, "synced-failover", holder.Owner()).Val(),
		"on the new master")
	require.False(t, tryLock(t, other), "another client is refused on the new master")

	time.Sleep(time.Until(oldLeaseEnd) + 300*time.Millisecond) // let the old lease run out
	require.True(t, get(t, holder.IsHeld), "renewed on the new master past the lease it had when the master died")
	assert.Greater(t, get(t, holder.RemainTTL), failoverWatchdog/3, "renewed")
	require.False(t, tryLock(t, other), "still refused after the old lease")
	requireOpen(t, lost, "a lock the failover kept reported lost")

	// The new master has no replica left: the unlock is not acknowledged,
	// which it only logs. It waits out the WAIT timeout twice: the promoted
	// replica has no scripts cached, so EVALSHA fails (NOSCRIPT) and EVAL
	// follows, each pipelined with its WAIT.
	unlockStart := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	t.Logf("unlock on the replica-less new master took %v", time.Since(unlockStart))
	requireOpen(t, lost, "the holding was reported lost")
	require.True(t, tryLock(t, other), "free after the unlock")
	require.NoError(t, other.Unlock(ctx))
}

// Without replica sync a failover may lose an acquire that had not reached
// the replica. Whatever happened, the two outcomes must not mix: either the
// lock survived (the holder holds it and others are refused), or another
// client may take it and the holder is told: Lost() closes, and its Unlock
// fails with ErrNotHeld or ErrLockLost.
func TestSentinelFailoverWithoutReplicaSync(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.StartSentinel(t)
	e := sentinelEnv(t, s)
	holderClient := e.newClient(t, client.WithWatchdogTimeout(failoverWatchdog))
	otherClient := sentinelEnv(t, s).newClient(t)
	holder, other := holderClient.Lock("async-failover"), otherClient.Lock("async-failover")

	require.NoError(t, holder.Lock(ctx))
	lost := holder.Lost()
	s.KillMaster(t) // at once: the acquire had no time to spare to reach the replica
	took := s.WaitFailover(t, 10*time.Second)

	onReplica := s.Master().Client(t).HExists(ctx, "async-failover", holder.Owner()).Val()
	ok, err := other.TryLock(ctx)
	require.NoError(t, err)
	if !ok {
		t.Logf("failover took %v; outcome: the lock survived (on the promoted replica: %v)", took, onReplica)
		require.True(t, get(t, holder.IsHeld), "refused to others, so held by its owner")
		requireOpen(t, lost, "a lock the failover kept reported lost")
		require.NoError(t, holder.Unlock(ctx))
		require.True(t, tryLock(t, other), "free after the unlock")
		require.NoError(t, other.Unlock(ctx))
		return
	}

	t.Logf("failover took %v; outcome: the lock was lost (on the promoted replica: %v)", took, onReplica)
	await.Value(t, lost, failoverWatchdog, "Lost(): another client took the lock")
	err = holder.Unlock(ctx)
	require.Error(t, err)
	require.True(t, errors.Is(err, client.ErrNotHeld) || errors.Is(err, client.ErrLockLost),
		"the holder's unlock reports the loss: %v", err)
	require.True(t, get(t, other.IsHeld), "the holder's unlock did not free the new holder's lock")
	require.NoError(t, other.Unlock(ctx))
}
