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
)

// A RedLock over 3 masters holds with one master stopped, and unlocks
// with it still down.
func TestRedLockSurvivesOneNodeDown(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := context.Background()
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

// firstField returns the only field of the lock hash name.
func firstField(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	keys, err := rdb.HKeys(context.Background(), name).Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	return keys[0]
}

// With two of three masters stopped no majority can be had: the RedLock
// fails with their errors and leaves nothing held on the one left.
func TestRedLockFailsWithTwoNodesDown(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := context.Background()
	envs[1].srv.Stop(t)
	envs[2].srv.Stop(t)
	r := client.NewRedLock(members(clients, "red")...)
	ok, err := r.TryLockWait(ctx, 200*time.Millisecond, 10*time.Second)
	require.False(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 3 masters failed")
	assert.Zero(t, envs[0].rdb.Exists(ctx, "red").Val(), "the minority taken was unlocked")
}

// With two of three masters held by another owner the RedLock is refused
// (false, no error) and unlocks the master it took.
func TestRedLockFailsWithTwoNodesHeldElsewhere(t *testing.T) {
	envs, clients := nodes(t, 3)
	ctx := context.Background()
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
	_, clients := nodes(t, 5)
	ctx := context.Background()
	locks := make([]*client.RedLock, 10)
	for i := range locks {
		locks[i] = client.NewRedLock(members(clients, "red:counter")...)
	}
	contend(t, len(locks), 5, 1,
		func(i int) error { return locks[i].Lock(ctx) },
		func(i int) error { return locks[i].Unlock(ctx) })
}

// Validity counts the time the acquire took: a slow master shrinks it by
// at least its delay.
func TestRedLockValidityAccountsForElapsedTime(t *testing.T) {
	envs, _ := nodes(t, 3)
	ctx := context.Background()
	p := faultproxy.New(t, envs[2].srv.Addr())
	slow := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = slow.Close() })
	pe := &env{name: "slow", rdb: slow, srv: envs[2].srv, clk: envs[2].clk}
	clients := []*client.Client{envs[0].newClient(t), envs[1].newClient(t), pe.newClient(t)}
	const lease = 10 * time.Second
	drift := lease/100 + 2*time.Millisecond

	fast := client.NewRedLock(members(clients, "red:fast")...)
	start := time.Now()
	require.NoError(t, fast.LockLease(ctx, lease))
	assert.WithinDuration(t, start.Add(lease-drift), fast.ValidUntil(), 50*time.Millisecond)
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
	ctx := context.Background()
	r := client.NewRedLock(members(clients, "red:lost")...)
	lost := r.Lost()
	require.NoError(t, r.Lock(ctx))
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

func TestRedLockInput(t *testing.T) {
	e := miniEnv(t)
	c := e.newClient(t)
	ctx := context.Background()
	require.ErrorIs(t, client.NewRedLock().Lock(ctx), client.ErrInvalidArgument)
	require.ErrorIs(t, client.NewRedLock(nil).Lock(ctx), client.ErrInvalidArgument)
	_, err := client.NewRedLock(c.Lock("a")).TryLockWait(ctx, 0, -time.Second)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	var nilLock *client.RedLock
	require.ErrorIs(t, nilLock.Lock(ctx), client.ErrInvalidArgument)
	assert.Empty(t, e.mini.DB(0).Keys(), "bad input wrote nothing")
}
