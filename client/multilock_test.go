package client_test

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// nodes starts n independent redis-servers, each with its own client.
func nodes(t *testing.T, n int, opts ...client.Option) ([]*env, []*client.Client) {
	envs := make([]*env, n)
	clients := make([]*client.Client, n)
	for i := range n {
		envs[i] = realEnv(t)
		clients[i] = envs[i].newClient(t, opts...)
	}
	return envs, clients
}

// members returns one handle on name from each client.
func members(clients []*client.Client, name string) []*client.Lock {
	locks := make([]*client.Lock, len(clients))
	for i, c := range clients {
		locks[i] = c.Lock(name)
	}
	return locks
}

// A MultiLock across three servers holds all of its members or none: with
// one member held elsewhere it takes none, and gives back the ones it took
// while trying. It takes its members in their canonical order (the name
// being the same, by server address, which the random ports decide), so
// the member held elsewhere is each position in turn: the members before
// it are taken (their servers ran scripts, the ones after it none) and
// must be given back.
func TestMultiLockAllOrNothingAcrossServers(t *testing.T) {
	t.Parallel()
	envs, clients := nodes(t, 3)
	ctx := testCtx(t)
	m := client.NewMultiLock(members(clients, "multi")...)
	require.NoError(t, m.Lock(ctx))
	for i, e := range envs {
		assert.Equal(t, int64(1), e.rdb.Exists(ctx, "multi").Val(), "member %d held", i)
	}
	require.NoError(t, m.Unlock(ctx))
	for i, e := range envs {
		assert.Zero(t, e.rdb.Exists(ctx, "multi").Val(), "member %d released", i)
	}

	order := []int{0, 1, 2}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(envs[a].srv.Addr(), envs[b].srv.Addr()) })
	for pos, blocked := range order {
		blocker := clients[blocked].Lock("multi")
		require.NoError(t, blocker.Lock(ctx))
		runs := make([]int64, len(envs))
		for i, e := range envs {
			runs[i] = scriptRuns(t, e.rdb)
		}
		start := time.Now()
		ok, err := m.TryLockWait(ctx, 300*time.Millisecond, 0)
		require.NoError(t, err)
		require.False(t, ok, "member %d (position %d) held elsewhere", blocked, pos)
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, 300*time.Millisecond)
		assert.Less(t, took, 2*time.Second, "one wait budget shared by the members")
		for _, i := range order[:pos] {
			assert.GreaterOrEqual(t, scriptRuns(t, envs[i].rdb)-runs[i], int64(2),
				"member %d, before position %d, was taken and given back", i, pos)
		}
		for _, i := range order[pos+1:] {
			assert.Equal(t, runs[i], scriptRuns(t, envs[i].rdb), "member %d, after position %d, was never tried", i, pos)
		}
		for i, e := range envs {
			if i != blocked {
				assert.Zero(t, e.rdb.Exists(ctx, "multi").Val(), "member %d given back (blocked at position %d)", i, pos)
			}
		}
		require.NoError(t, blocker.Unlock(ctx))
	}
}

// A MultiLock blocked on a member takes the set once the member is freed.
func TestMultiLockWaitsForAMember(t *testing.T) {
	t.Parallel()
	_, clients := nodes(t, 2)
	ctx := testCtx(t)
	blocker := clients[1].Lock("multi:w")
	require.NoError(t, blocker.Lock(ctx))
	m := client.NewMultiLock(members(clients, "multi:w")...)
	done := inBackground(t, m.Lock)
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("locked while a member was held elsewhere: %v", r.err)
	default:
	}
	require.NoError(t, blocker.Unlock(ctx))
	require.NoError(t, await.Value(t, done, 5*time.Second, "the MultiLock").err)
	require.NoError(t, m.Unlock(ctx))
}

// Reentry goes through the members: each member's hold count follows.
func TestMultiLockReentrant(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		locks := []*client.Lock{c.Lock("ra"), c.Lock("rb"), c.Lock("rc")}
		m := client.NewMultiLock(locks...)
		ok, err := m.TryLockWait(ctx, 0, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = m.TryLockWait(ctx, 0, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		for _, l := range locks {
			assert.Equal(t, 2, get(t, l.HoldCount), l.Name())
		}
		require.NoError(t, locks[0].Lock(ctx), "a member's own handle reenters it too")
		assert.Equal(t, 3, get(t, locks[0].HoldCount))
		require.NoError(t, locks[0].Unlock(ctx))
		require.NoError(t, m.Unlock(ctx))
		require.NoError(t, m.Unlock(ctx))
		for _, l := range locks {
			assert.False(t, get(t, l.IsLocked), l.Name())
		}
		require.ErrorIs(t, m.Unlock(ctx), client.ErrNotHeld)
	})
}

// Among 10 contenders trying at once, exactly one takes the set.
func TestMultiLockExactlyOneWinner(t *testing.T) {
	t.Parallel()
	_, clients := nodes(t, 3)
	ctx := testCtx(t)
	var wins atomic.Int32
	var winner *client.MultiLock
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 10 {
		m := client.NewMultiLock(members(clients, "multi:one")...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := m.TryLockWait(ctx, 0, time.Minute)
			assert.NoError(t, err)
			if ok {
				wins.Add(1)
				mu.Lock()
				winner = m
				mu.Unlock()
			}
		}()
	}
	close(start)
	await.Group(t, &wg, 10*time.Second, "the contenders")
	require.Equal(t, int32(1), wins.Load())
	require.NoError(t, winner.Unlock(ctx))
}

// Contenders that list the members in opposite orders neither deadlock
// nor overlap.
func TestMultiLockContentionOppositeOrders(t *testing.T) {
	_, clients := nodes(t, 3)
	locks := make([]*client.MultiLock, 4)
	for i := range locks {
		ms := members(clients, "multi:c")
		if i%2 == 1 {
			ms[0], ms[2] = ms[2], ms[0]
		}
		locks[i] = client.NewMultiLock(ms...)
	}
	contendLocks(t, locks, 10)
}

// A fixed lease applies to every member.
func TestMultiLockLease(t *testing.T) {
	t.Parallel()
	envs, clients := nodes(t, 2)
	ctx := testCtx(t)
	m := client.NewMultiLock(members(clients, "multi:lease")...)
	require.NoError(t, m.LockLease(ctx, 5*time.Second))
	for _, e := range envs {
		ttl := e.rdb.PTTL(ctx, "multi:lease").Val()
		assert.Greater(t, ttl, 4*time.Second)
		assert.LessOrEqual(t, ttl, 5*time.Second)
	}
	require.NoError(t, m.Unlock(ctx))
}

func TestMultiLockInput(t *testing.T) {
	t.Parallel()
	e := miniEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	require.ErrorIs(t, client.NewMultiLock().Lock(ctx), client.ErrInvalidArgument)
	require.ErrorIs(t, client.NewMultiLock(c.Lock("a"), nil).Lock(ctx), client.ErrInvalidArgument)
	a := c.Lock("a")
	require.ErrorIs(t, client.NewMultiLock(a, a).Lock(ctx), client.ErrInvalidArgument)
	require.ErrorIs(t, client.NewMultiLock(c.Lock("")).Lock(ctx), client.ErrInvalidArgument)
	_, err := client.NewMultiLock(c.Lock("a")).TryLockWait(ctx, -1, 0)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	require.ErrorIs(t, client.NewMultiLock(c.Lock("a")).LockLease(ctx, 0), client.ErrInvalidArgument)
	var nilLock *client.MultiLock
	require.ErrorIs(t, nilLock.Unlock(ctx), client.ErrInvalidArgument)
	assert.Empty(t, withoutRegistry(e.mini.DB(0).Keys()), "bad input wrote nothing")
}
