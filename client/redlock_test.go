package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/faultproxy"
	"github.com/warden-go/warden/redisio"
)

// A RedLock over 3 masters holds with one master stopped, and unlocks
// with it still down.
func TestRedLockSurvivesOneNodeDown(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	envs[2].srv.Stop(t)
	r := client.NewRedLock(members(clients, "red")...)
	ok, err := r.TryLockWait(ctx, time.Second, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	for _, e := range envs[:2] {
		assert.Equal(t, r.Owner(), firstField(t, e.rdb, "red"), "one owner on every master")
	}
	require.NoError(t, r.Unlock(ctx), "a majority released; the stopped master is not an error")
	for _, e := range envs[:2] {
		assert.Zero(t, e.rdb.Exists(ctx, "red").Val())
	}
}

// firstField returns the only holder's field of the lock hash name (the
// hash also has the holder's acquire record, redisio.AcquireRecordField).
func firstField(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	keys, err := rdb.HKeys(context.Background(), name).Result()
	require.NoError(t, err)
	require.Len(t, keys, 2, "the holder's count and its acquire record")
	for _, k := range keys {
		if redisio.AcquireRecordField(k) != keys[0] && redisio.AcquireRecordField(k) != keys[1] {
			continue
		}
		return k
	}
	t.Fatalf("no holder with its acquire record in %v", keys)
	return ""
}

// With two of three masters stopped no majority can be had: the RedLock
// fails with their errors and leaves nothing held on the one left.
func TestRedLockFailsWithTwoNodesDown(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	envs[1].srv.Stop(t)
	envs[2].srv.Stop(t)
	r := client.NewRedLock(members(clients, "red")...)
	ok, err := r.TryLockWait(ctx, 200*time.Millisecond, 10*time.Second)
	require.False(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 3 masters failed")
	assert.Zero(t, envs[0].rdb.Exists(ctx, "red").Val(), "the minority taken was unlocked")
}

// Over 4 masters the quorum is 3, not (4+1)/2 = 2: with 2 stopped the
// RedLock fails with their errors and leaves nothing held on the 2 left;
// with 1 stopped the 3 left are a majority and it holds.
func TestRedLockOnFourNodesNeedsThree(t *testing.T) {
	envs, clients := nodes(t, 4)
	ctx := testCtx(t)
	envs[3].srv.Stop(t)
	r := client.NewRedLock(members(clients, "red:four")...)
	ok, err := r.TryLockWait(ctx, time.Second, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "3 of 4 masters are a majority")
	for _, e := range envs[:3] {
		assert.Equal(t, r.Owner(), firstField(t, e.rdb, "red:four"))
	}
	require.NoError(t, r.Unlock(ctx))

	envs[2].srv.Stop(t)
	ok, err = r.TryLockWait(ctx, 200*time.Millisecond, 10*time.Second)
	require.False(t, ok, "2 of 4 masters are no majority")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 4 masters failed")
	for i, e := range envs[:2] {
		assert.Zero(t, e.rdb.Exists(ctx, "red:four").Val(), "master %d: the minority taken was unlocked", i)
	}
}

// With two of three masters held by another owner the RedLock is refused
// (false, no error) and unlocks the master it took.
func TestRedLockFailsWithTwoNodesHeldElsewhere(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	for _, c := range clients[1:] {
		require.NoError(t, c.Lock("red").Lock(ctx))
	}
	r := client.NewRedLock(members(clients, "red")...)
	ok, err := r.TryLockWait(ctx, 200*time.Millisecond, 10*time.Second)
	require.NoError(t, err)
	require.False(t, ok)
	assert.Zero(t, envs[0].rdb.Exists(ctx, "red").Val(), "the minority taken was unlocked")

	other := client.NewRedLock(members(clients, "red")...)
	require.ErrorIs(t, other.Unlock(ctx), client.ErrNotHeld, "a RedLock that holds nothing releases nothing")
}

// 10 goroutines × 5 increments under one 5-master RedLock keep an exact
// counter, never two inside at once.
func TestRedLockCounterOnFiveNodes(t *testing.T) {
	// A 30 s watchdog gives a per-node timeout of 300 ms. With the tests'
	// 1 s it is 50 ms, which masters under -race on a busy machine miss,
	// and a Lock that sees a majority time out fails at once.
	_, clients := nodes(t, 5, client.WithWatchdogTimeout(30*time.Second))
	locks := make([]*client.RedLock, 10)
	for i := range locks {
		locks[i] = client.NewRedLock(members(clients, "red:counter")...)
	}
	contendLocks(t, locks, 5)
}

// Validity counts the time the acquire took: a slow master shrinks it by
// at least its delay.
func TestRedLockValidityAccountsForElapsedTime(t *testing.T) {
	envs, _ := nodes(t, 3)
	ctx := testCtx(t)
	p := faultproxy.New(t, envs[2].srv.Addr())
	slow := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = slow.Close() })
	pe := &env{name: "slow", rdb: slow, srv: envs[2].srv, clk: envs[2].clk}
	clients := []*client.Client{envs[0].newClient(t), envs[1].newClient(t), pe.newClient(t)}
	const lease = 30 * time.Second // a per-node timeout of 300 ms
	drift := lease/100 + 2*time.Millisecond

	fast := client.NewRedLock(members(clients, "red:fast")...)
	start := time.Now()
	require.NoError(t, fast.LockLease(ctx, lease))
	end := time.Now()
	assert.False(t, fast.ValidUntil().Before(start.Add(lease-drift)), "counted from the start of the acquire")
	assert.False(t, fast.ValidUntil().After(end.Add(lease-drift)))
	require.NoError(t, fast.Unlock(ctx))

	const delay = 40 * time.Millisecond // per chunk each way: over 80 ms per round trip
	p.SetLatency(delay)
	r := client.NewRedLock(members(clients, "red:slow")...)
	start = time.Now()
	require.NoError(t, r.LockLease(ctx, lease))
	acquired := time.Now()
	assert.GreaterOrEqual(t, acquired.Sub(start), 2*delay, "the acquire waited for the slow master")
	left := r.ValidUntil().Sub(acquired)
	assert.LessOrEqual(t, left, lease-2*delay-drift, "validity = lease − elapsed − drift")
	assert.Positive(t, left)
	assert.Equal(t, int64(1), envs[2].rdb.Exists(ctx, "red:slow").Val(), "the slow master granted it too")
	p.SetLatency(0)
	require.NoError(t, r.Unlock(ctx))
	assert.True(t, r.ValidUntil().IsZero())
}

// In watchdog mode the RedLock is renewed through its members and lost
// only when a majority of them is: one master losing the lock is
// tolerated, a second one loses the RedLock.
func TestRedLockLostWhenMajorityLost(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	r := client.NewRedLock(members(clients, "red:lost")...)
	lost := r.Lost()
	// All three taken (under load a master may miss the per-node timeout,
	// and a minority not taken would already count as lost).
	for try := 0; ; try++ {
		require.NoError(t, r.Lock(ctx))
		all := true
		for _, e := range envs {
			all = all && e.rdb.Exists(ctx, "red:lost").Val() == 1
		}
		if all {
			break
		}
		require.Less(t, try, 5, "all three masters granted it")
		require.NoError(t, r.Unlock(ctx))
		lost = r.Lost()
	}
	time.Sleep(2 * watchdog) // renewed past its first lease
	for _, e := range envs {
		assert.Equal(t, int64(1), e.rdb.Exists(ctx, "red:lost").Val())
	}

	require.NoError(t, envs[0].rdb.Del(ctx, "red:lost").Err())
	time.Sleep(watchdog) // the next renewal finds it gone
	select {
	case <-lost:
		t.Fatal("lost with a majority still held")
	default:
	}

	require.NoError(t, envs[1].rdb.Del(ctx, "red:lost").Err())
	await.Value(t, lost, 5*time.Second, "the RedLock's loss once a majority is gone")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.ErrorIs(t, r.Unlock(ctx), client.ErrNotHeld, "only a minority was left to release")
	}()
	await.Group(t, &wg, 5*time.Second, "the unlock")
}

// Two RedLocks over the same member handles have owners of their own and
// exclude each other; the members' own handles do not reach their holds.
func TestRedLocksOverSameHandlesExclude(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	ms := members(clients, "red:twice")
	a, b := client.NewRedLock(ms...), client.NewRedLock(ms...)
	require.NotEqual(t, a.Owner(), b.Owner())
	require.NoError(t, a.LockLease(ctx, time.Minute))
	ok, err := b.TryLockWait(ctx, 100*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	require.ErrorIs(t, ms[0].Unlock(ctx), client.ErrNotHeld)
	assert.Equal(t, int64(1), envs[0].rdb.Exists(ctx, "red:twice").Val())
	require.NoError(t, a.Unlock(ctx))
}

// With a fixed lease the RedLock is lost when its validity ends, a drift
// before the members' own leases run out.
func TestRedLockFixedLeaseLostAtValidityEnd(t *testing.T) {
	_, clients := nodes(t, 3)
	ctx := testCtx(t)
	r := client.NewRedLock(members(clients, "red:fixed")...)
	require.NoError(t, r.LockLease(ctx, 500*time.Millisecond))
	until := r.ValidUntil()
	await.Value(t, r.Lost(), 5*time.Second, "the loss at the validity's end")
	assert.False(t, time.Now().Before(until), "not before the validity ends")
	time.Sleep(50 * time.Millisecond) // the members' leases end a drift later
	require.ErrorIs(t, r.Unlock(ctx), client.ErrNotHeld)

	// Acquired again while the lost holding is still counted: a new
	// holding with a channel of its own.
	require.NoError(t, r.LockLease(ctx, 500*time.Millisecond))
	await.Value(t, r.Lost(), 5*time.Second, "the second holding's loss")
	require.NoError(t, r.LockLease(ctx, time.Minute), "acquired again after the loss")
	requireOpen(t, r.Lost(), "the new holding reported lost")
	require.NoError(t, r.Unlock(ctx))
	assert.True(t, r.ValidUntil().IsZero(), "one unlock ends the new holding")
}

// Members whose clients are closed renew nothing: with two of three
// closed the RedLock is lost, and a closed member does not stop Unlock
// from releasing the others.
func TestRedLockClosedMembers(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	r := client.NewRedLock(members(clients, "red:closed")...)
	require.NoError(t, r.Lock(ctx))
	lost := r.Lost()
	envs[0].close(t, clients[0])
	select {
	case <-lost:
		t.Fatal("lost with a majority still renewed")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, r.Unlock(ctx), "released on the two open masters")
	for _, e := range envs[1:] {
		assert.Zero(t, e.rdb.Exists(ctx, "red:closed").Val())
	}

	require.NoError(t, r.Lock(ctx), "two open masters are a majority")
	envs[1].close(t, clients[1])
	await.Value(t, r.Lost(), 5*time.Second, "the loss once a majority of members is closed")
	require.Error(t, r.Unlock(ctx))
}

// A blocking Lock with no majority reachable returns the masters' errors
// promptly instead of retrying until its context ends.
func TestRedLockLockFailsFastWithoutAMajority(t *testing.T) {
	envs, clients := nodes(t, 3)
	envs[1].srv.Stop(t)
	envs[2].srv.Stop(t)
	r := client.NewRedLock(members(clients, "red:down")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := r.Lock(ctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, client.ErrNotObtained)
	assert.Contains(t, err.Error(), "a majority is out of reach")
	assert.Zero(t, envs[0].rdb.Exists(context.Background(), "red:down").Val())
}

func TestRedLockInput(t *testing.T) {
	e := miniEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	require.ErrorIs(t, client.NewRedLock().Lock(ctx), client.ErrInvalidArgument)
	require.ErrorIs(t, client.NewRedLock(nil).Lock(ctx), client.ErrInvalidArgument)
	_, err := client.NewRedLock(c.Lock("a")).TryLockWait(ctx, 0, -time.Second)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	var nilLock *client.RedLock
	require.ErrorIs(t, nilLock.Lock(ctx), client.ErrInvalidArgument)
	assert.Nil(t, nilLock.Lost())
	assert.Empty(t, client.NewRedLock().Owner())
	require.ErrorIs(t, client.NewRedLock(c.Lock("a"), c.Lock("a")).Lock(ctx), client.ErrInvalidArgument,
		"one master would vote twice")
	assert.Empty(t, withoutRegistry(e.mini.DB(0).Keys()), "bad input wrote nothing")
}

// Unlocking a reentered RedLock returns at once: the holding lives on,
// and so do its loss watchers.
func TestRedLockReentryUnlockReturns(t *testing.T) {
	_, clients := nodes(t, 3)
	ctx := testCtx(t)
	r := client.NewRedLock(members(clients, "red:reenter")...)
	require.NoError(t, r.LockLease(ctx, time.Minute))
	require.NoError(t, r.LockLease(ctx, time.Minute))
	done := make(chan error, 1)
	go func() { done <- r.Unlock(ctx) }()
	require.NoError(t, await.Value(t, done, 5*time.Second, "the inner Unlock"))
	select {
	case <-r.Lost():
		t.Fatal("the outer holding reported lost")
	default:
	}
	require.NoError(t, r.Unlock(ctx))
	assert.True(t, r.ValidUntil().IsZero())
}
