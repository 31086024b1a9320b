package client_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// pairSet is a MultiLock over ml-a and ml-b of one Client, on a fake
// clock, whose scripts pass through h.
type pairSet struct {
	m    *client.MultiLock
	a, b *client.Lock
	fake *clockwork.FakeClock
	e    *env
	h    *redistest.Hooked
}

func newPairSet(t *testing.T) pairSet {
	fake := clockwork.NewFakeClock()
	e, h := hookedEnv(t, fake)
	c := e.newClient(t)
	a, b := c.Lock("ml-a"), c.Lock("ml-b")
	return pairSet{m: client.NewMultiLock(a, b), a: a, b: b, fake: fake, e: e, h: h}
}

// lapseNextReentryOfA lets the next reentry of ml-a reach Redis and then,
// before its answer comes, runs out every lease the engine knows of (the
// fake clock jumps 3 minutes; the keys are deleted as Redis would expire
// them). The channel closes once that has happened.
func (s pairSet) lapseNextReentryOfA(t *testing.T) <-chan struct{} {
	ctx := testCtx(t)
	done := make(chan struct{})
	var once atomic.Bool
	s.h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if !sc.Acquires() || sc.Keys[0] != "ml-a" || !once.CompareAndSwap(false, true) {
			return sc.Run()
		}
		// This runs on an engine worker: it asserts, never stops the
		// goroutine.
		r := sc.Run()
		assert.NoError(t, r.Err())
		lost := s.a.Lost()
		s.fake.Advance(3 * time.Minute)
		assert.NoError(t, s.e.rdb.Del(ctx, "ml-a", "ml-b").Err())
		select {
		case <-lost:
		case <-time.After(5 * time.Second):
			t.Error("ml-a's Lost did not close when its lease ran out")
		}
		close(done)
		return r
	})
	return done
}

// assertHeldOnce checks that each member is held once, by the set.
func (s pairSet) assertHeldOnce(t *testing.T) {
	for _, member := range []*client.Lock{s.a, s.b} {
		assert.Equal(t, 1, get(t, member.HoldCount), "%s held once", member.Name())
	}
}

// A set whose holding was lost (through ml-b's lease) and that is taken
// again without an Unlock gives back what the lost holding left first:
// ml-a, which outlived the loss, is held once by the new holding, not
// twice, and the new holding's Unlock frees both members.
func TestMultiLockRetakenAfterItsLossLeavesNoMemberHeld(t *testing.T) {
	t.Parallel()
	s := newPairSet(t)
	ctx := testCtx(t)
	require.NoError(t, s.m.LockLease(ctx, time.Minute))
	require.NoError(t, s.a.Extend(ctx, 2*time.Minute)) // ml-a outlives ml-b's lease
	setLost := s.m.Lost()
	blockUntil(t, s.fake, 1)
	s.fake.Advance(61 * time.Second)
	await.Value(t, setLost, 5*time.Second, "the set's Lost, ml-b's lease over")
	require.NoError(t, s.e.rdb.Del(ctx, "ml-b").Err()) // as Redis expires it
	assert.False(t, isClosed(s.a.Lost()), "ml-a is still held")

	require.NoError(t, s.m.LockLease(ctx, time.Minute), "the set taken again")
	assert.False(t, isClosed(s.m.Lost()), "the new holding is not lost")
	s.assertHeldOnce(t)
	require.NoError(t, s.m.Unlock(ctx))
	assert.Zero(t, s.e.rdb.Exists(ctx, "ml-a", "ml-b").Val(), "no member left held")
}

// A set whose member ml-a is held through its own handle, and whose
// acquire reenters ml-a just as that holding's lease runs out, asks ml-a
// again at once and takes it afresh: the acquire holds the set, not
// fails with the handle's loss (which the handle's Lost tells).
func TestMultiLockTakesAfreshAMemberLostDuringItsReentry(t *testing.T) {
	t.Parallel()
	s := newPairSet(t)
	ctx := testCtx(t)
	require.NoError(t, s.a.LockLease(ctx, time.Minute))
	handleLost := s.a.Lost()
	lapsed := s.lapseNextReentryOfA(t)
	require.NoError(t, s.m.LockLease(ctx, time.Minute), "the set taken")
	await.Value(t, lapsed, time.Second, "the hook ran")
	assert.True(t, isClosed(handleLost), "the handle's holding was lost")
	assert.False(t, isClosed(s.m.Lost()), "the set's holding is not lost")
	s.assertHeldOnce(t)
	require.NoError(t, s.m.Unlock(ctx))
	assert.Zero(t, s.e.rdb.Exists(ctx, "ml-a", "ml-b").Val(), "no member left held")
}

// A reentry of a set held (not lost) during which a member's lease runs
// out fails with ErrLockLost, as a Lock's reentry does: the holding it
// reentered is what was lost.
func TestMultiLockReentryOfALiveHoldingLostInFlightFails(t *testing.T) {
	t.Parallel()
	s := newPairSet(t)
	ctx := testCtx(t)
	require.NoError(t, s.m.LockLease(ctx, time.Minute))
	lapsed := s.lapseNextReentryOfA(t)
	err := s.m.LockLease(ctx, time.Minute)
	await.Value(t, lapsed, time.Second, "the hook ran")
	require.ErrorIs(t, err, client.ErrLockLost)
	assert.True(t, isClosed(s.m.Lost()), "the set's Lost")
}

// A RedLock whose holding was lost (a majority of its members vanished)
// and that is taken again without an Unlock gives back what the lost
// holding left first: the member that outlived the loss is held once by
// the new holding, and the new holding's Unlock frees them all.
func TestRedLockRetakenAfterItsLossLeavesNoMemberHeld(t *testing.T) {
	fake := clockwork.NewFakeClock()
	e, _ := hookedEnv(t, fake)
	ctx := testCtx(t)
	var members []*client.Lock
	for _, n := range []string{"rl:1", "rl:2", "rl:3"} {
		members = append(members, e.newClient(t).Lock(n))
	}
	r := client.NewRedLock(members...)
	require.NoError(t, r.Lock(ctx)) // watchdog mode: renewal finds the loss
	lost := r.Lost()
	require.NoError(t, e.rdb.Del(ctx, "rl:1", "rl:2").Err())
	for deadline := time.Now().Add(5 * time.Second); !isClosed(lost); {
		require.True(t, time.Now().Before(deadline), "the RedLock's Lost, a majority gone")
		fake.Advance(time.Second) // renewal periods pass
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, int64(1), e.rdb.Exists(ctx, "rl:3").Val(), "rl:3 outlived the loss")

	require.NoError(t, r.Lock(ctx), "taken again")
	for _, n := range []string{"rl:1", "rl:2", "rl:3"} {
		assert.Len(t, e.rdb.HKeys(ctx, n).Val(), 2, "%s held by one owner once (its count and acquire record)", n)
		assert.NotContains(t, e.rdb.HVals(ctx, n).Val(), "2", "%s held once", n)
	}
	require.NoError(t, r.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "rl:1", "rl:2", "rl:3").Val(), "no member left held")
}

// A reentry of a set whose member's holding is gone from Redis (its key
// deleted behind the engine's back) takes that member afresh, which the
// set cannot count as a reentry: it fails with ErrLockLost, the set's Lost
// closed, and what it took is given back; the set's Unlock then frees the
// rest.
func TestMultiLockReentryOfAMemberGoneFromRedisFails(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	b := c.Lock("ml-gone-b")
	m := client.NewMultiLock(c.Lock("ml-gone-a"), b)
	require.NoError(t, m.LockLease(ctx, time.Minute))
	require.NoError(t, e.rdb.Del(ctx, "ml-gone-a").Err())
	err := m.LockLease(ctx, time.Minute)
	require.ErrorIs(t, err, client.ErrLockLost)
	assert.Contains(t, err.Error(), "ml-gone-a")
	assert.True(t, isClosed(m.Lost()), "the set's Lost")
	assert.Zero(t, e.rdb.Exists(ctx, "ml-gone-a").Val(), "the member taken afresh is given back")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "ml-gone-b", b.Owner()).Val(),
		"the other member keeps the lost holding's hold, not the reentry's")
	assert.ErrorIs(t, m.Unlock(ctx), client.ErrLockLost)
	assert.Zero(t, e.rdb.Exists(ctx, "ml-gone-a", "ml-gone-b").Val(), "no member left held")
}
