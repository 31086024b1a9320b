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

// lapse is what reentryLapse sets up.
type lapse struct {
	m      *client.MultiLock
	a, b   *client.Lock
	fake   *clockwork.FakeClock
	rdb    *redis.Client
	lapsed <-chan struct{} // closed once the hook has run
}

// reentryLapse sets up a MultiLock over ml-a and ml-b, held with a
// minute's lease on a fake clock, and a hook that lets the next reentry of
// ml-a reach Redis and then, before its answer comes, runs out every
// lease the engine knows of (the fake clock jumps 3 minutes; the keys are
// deleted as Redis would expire them).
func reentryLapse(t *testing.T) lapse {
	fake := clockwork.NewFakeClock()
	e, h := hookedEnv(t, fake)
	c := e.newClient(t)
	ctx := testCtx(t)
	a, b := c.Lock("ml-a"), c.Lock("ml-b")
	m := client.NewMultiLock(a, b)
	require.NoError(t, m.LockLease(ctx, time.Minute))
	done := make(chan struct{})
	var once atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if !sc.Acquires() || sc.Keys[0] != "ml-a" || !once.CompareAndSwap(false, true) {
			return sc.Run()
		}
		// Redis reenters ml-a, and every lease runs out before the
		// answer. (This runs on an engine worker: it asserts, never
		// stops the goroutine.)
		r := sc.Run()
		assert.NoError(t, r.Err())
		lost := a.Lost()
		fake.Advance(3 * time.Minute)
		assert.NoError(t, e.rdb.Del(ctx, "ml-a", "ml-b").Err())
		select {
		case <-lost:
		case <-time.After(5 * time.Second):
			t.Error("ml-a's Lost did not close when its lease ran out")
		}
		close(done)
		return r
	})
	return lapse{m: m, a: a, b: b, fake: fake, rdb: e.rdb, lapsed: done}
}

// A set whose holding was lost and that is taken again without an Unlock
// takes its members afresh, even a member the engine still counted as
// held (its lease had not yet run out here) and whose lease runs out
// while that reentry is in flight: the attempt is given back and tried
// again, and the acquire holds the set, not fails with the stale
// holding's loss.
func TestMultiLockRetakenAfterItsLossRetriesAMemberLostInFlight(t *testing.T) {
	l := reentryLapse(t)
	m, a, fake := l.m, l.a, l.fake
	ctx := testCtx(t)
	// Lose the set's holding through ml-b alone: ml-a is extended past
	// the minute, so the engine counts it held.
	require.NoError(t, a.Extend(ctx, 2*time.Minute))
	setLost := m.Lost()
	blockUntil(t, fake, 1)
	fake.Advance(61 * time.Second)
	await.Value(t, setLost, 5*time.Second, "the set's Lost, ml-b's lease over")
	assert.False(t, isClosed(a.Lost()), "ml-a is still held here")

	errc := make(chan error, 1)
	go func() { errc <- m.LockLease(ctx, time.Minute) }()
	await.Value(t, l.lapsed, 5*time.Second, "the reentry of ml-a in flight as its lease ran out")
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		select {
		case err = <-errc:
		case <-time.After(2 * time.Millisecond):
			require.True(t, time.Now().Before(deadline), "LockLease has not returned")
			fake.Advance(10 * time.Millisecond) // the pause before the next attempt
			continue
		}
		break
	}
	require.NoError(t, err, "the set taken afresh")
	assert.False(t, isClosed(m.Lost()), "the new holding is not lost")
	for _, member := range []*client.Lock{l.a, l.b} {
		assert.Equal(t, 1, get(t, member.HoldCount), "%s held once, by the new holding", member.Name())
	}
	assert.Equal(t, int64(2), l.rdb.Exists(ctx, "ml-a", "ml-b").Val())
	require.NoError(t, m.Unlock(ctx))
}

// A reentry of a set held (not lost) during which a member's lease runs
// out fails with ErrLockLost, as a Lock's reentry does: the holding it
// reentered is what was lost.
func TestMultiLockReentryOfALiveHoldingLostInFlightFails(t *testing.T) {
	l := reentryLapse(t)
	ctx := testCtx(t)
	err := l.m.LockLease(ctx, time.Minute)
	await.Value(t, l.lapsed, time.Second, "the hook ran")
	require.ErrorIs(t, err, client.ErrLockLost)
	assert.True(t, isClosed(l.m.Lost()), "the set's Lost")
}
