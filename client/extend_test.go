package client_test

import (
	"context"
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
	"github.com/warden-go/warden/redisio"
)

// extendable is what the Extend tests need of a lock handle.
type extendable interface {
	client.Mutex
	Extend(ctx context.Context, lease time.Duration) error
}

// extendCase is one lock type whose holding Extend can extend: mine and a
// contender other (another owner, on another client) that mine excludes;
// keys are the Redis keys whose deletion loses mine's holding.
type extendCase struct {
	kind  string
	setup func(t *testing.T, e *env, name string) (mine, other extendable, keys []string)
}

// extendCases are every lock kind with a lease: the reentrant, fair,
// fenced, non-reentrant, non-reentrant fair, spin, read, write and group
// locks, and a MultiLock and a RedLock over members on one server.
var extendCases = []extendCase{
	{"lock", single((*client.Client).Lock)},
	{"fair", single((*client.Client).FairLock)},
	{"fenced", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		return e.newClient(t).FencedLock(name), e.newClient(t).FencedLock(name), []string{name}
	}},
	{"nonreentrant", single((*client.Client).NonReentrantLock)},
	{"nonreentrant-fair", single((*client.Client).NonReentrantFairLock)},
	{"spin", single((*client.Client).SpinLock)},
	{"group", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		return e.newClient(t).GroupLock(name, "a", "b"), e.newClient(t).GroupLock(name, "b", "c"), []string{name}
	}},
	{"read", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		return e.newClient(t).ReadWriteLock(name).ReadLock(), e.newClient(t).ReadWriteLock(name).WriteLock(), []string{name}
	}},
	{"write", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		return e.newClient(t).ReadWriteLock(name).WriteLock(), e.newClient(t).ReadWriteLock(name).ReadLock(), []string{name}
	}},
	{"multilock", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		a, b, o := e.newClient(t), e.newClient(t), e.newClient(t)
		return client.NewMultiLock(a.Lock(name+":a"), b.Lock(name+":b")),
			client.NewMultiLock(o.Lock(name+":a"), o.Lock(name+":b")), []string{name + ":b"}
	}},
	{"redlock", func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		var mine, theirs []*client.Lock
		o := e.newClient(t)
		for _, n := range []string{name + ":1", name + ":2", name + ":3"} {
			mine, theirs = append(mine, e.newClient(t).Lock(n)), append(theirs, o.Lock(n))
		}
		return client.NewRedLock(mine...), client.NewRedLock(theirs...), []string{name + ":1", name + ":2"}
	}},
}

func single(make func(*client.Client, string, ...client.LockOption) *client.Lock) func(*testing.T, *env, string) (extendable, extendable, []string) {
	return func(t *testing.T, e *env, name string) (extendable, extendable, []string) {
		return make(e.newClient(t), name), make(e.newClient(t), name), []string{name}
	}
}

func eachExtendable(t *testing.T, fn func(t *testing.T, e *env, c extendCase)) {
	for _, c := range extendCases {
		t.Run(c.kind, func(t *testing.T) {
			// Each on a server of its own: they wait on real leases, not on
			// the CPU. A RedLock's masters have 50 ms to answer each
			// attempt, which the others' load under -race can exceed: it
			// runs alone, before them.
			if c.kind != "redlock" {
				t.Parallel()
			}
			fn(t, realEnv(t), c)
		})
	}
}

// Extend makes a fixed-lease holding outlive its original lease: the
// contender stays refused past the old end, the holding is not lost, and
// an Unlock then frees the lock as usual.
func TestExtendOutlivesTheOriginalLease(t *testing.T) {
	eachExtendable(t, func(t *testing.T, e *env, c extendCase) {
		ctx := testCtx(t)
		mine, other, _ := c.setup(t, e, "extend-outlives")
		require.NoError(t, mine.LockLease(ctx, 400*time.Millisecond))
		require.NoError(t, mine.Extend(ctx, 5*time.Second))
		time.Sleep(time.Second) // well past the original lease
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "still held past the original lease")
		assert.False(t, isClosed(mine.Lost()), "not lost at the original lease's end")
		require.NoError(t, mine.Unlock(ctx))
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "free after the unlock")
		require.NoError(t, other.Unlock(ctx))
	})
}

// Only the owner that holds the lock may extend it: another owner (even
// while the lock is held), an owner that never held it, and the owner
// after its Unlock get ErrNotHeld, and the holder's lease is untouched. An
// owner whose holding vanished from Redis gets ErrNotHeld too, and its
// Lost closes.
func TestExtendByAnotherOwnerIsNotHeld(t *testing.T) {
	eachExtendable(t, func(t *testing.T, e *env, c extendCase) {
		ctx := testCtx(t)
		mine, other, keys := c.setup(t, e, "extend-owner")
		require.ErrorIs(t, mine.Extend(ctx, time.Minute), client.ErrNotHeld, "never held")
		require.NoError(t, mine.LockLease(ctx, 2*time.Second))
		require.ErrorIs(t, other.Extend(ctx, time.Minute), client.ErrNotHeld, "another owner")
		for _, k := range keys {
			assert.LessOrEqual(t, e.rdb.PTTL(ctx, k).Val(), 2*time.Second, "the holder's lease is untouched")
		}
		require.NoError(t, mine.Unlock(ctx))
		require.ErrorIs(t, mine.Extend(ctx, time.Minute), client.ErrNotHeld, "after the unlock")

		require.NoError(t, mine.LockLease(ctx, time.Minute))
		lost := mine.Lost()
		require.NoError(t, e.rdb.Del(ctx, keys...).Err())
		require.ErrorIs(t, mine.Extend(ctx, time.Minute), client.ErrNotHeld, "the holding vanished")
		await.Value(t, lost, 5*time.Second, "Lost, once Extend found the holding gone")
		assert.Zero(t, e.rdb.Exists(ctx, keys...).Val(), "Extend wrote nothing")
	})
}

// The engine learns the extended lease: Lost closes when the extended
// lease runs out, not at the original lease's end, and at once (not a
// minute later) after an extend that shortened the lease. Either way Redis
// has freed the lock by the time Lost closes, or does within a moment.
func TestLostFollowsTheExtendedLease(t *testing.T) {
	eachExtendable(t, func(t *testing.T, e *env, c extendCase) {
		ctx := testCtx(t)
		mine, _, keys := c.setup(t, e, "extend-lost")
		require.NoError(t, mine.LockLease(ctx, 500*time.Millisecond))
		start := time.Now()
		require.NoError(t, mine.Extend(ctx, 2500*time.Millisecond))
		lost := mine.Lost()
		staysOpen(t, lost, 1500*time.Millisecond, "Lost, past the original lease's end")
		await.Value(t, lost, 10*time.Second, "Lost, at the extended lease's end")
		assert.GreaterOrEqual(t, time.Since(start), 2400*time.Millisecond, "not before the extended lease's end")
		eventually(t, time.Second, func() bool { return e.rdb.Exists(ctx, keys...).Val() < int64(len(keys)) },
			"Redis let the lock go with the extended lease")

		require.NoError(t, mine.LockLease(ctx, time.Minute))
		start = time.Now()
		require.NoError(t, mine.Extend(ctx, 300*time.Millisecond))
		await.Value(t, mine.Lost(), 10*time.Second, "Lost, at the shortened lease's end")
		assert.Less(t, time.Since(start), 5*time.Second, "the shortened lease, not the minute")
		eventually(t, time.Second, func() bool { return e.rdb.Exists(ctx, keys...).Val() < int64(len(keys)) },
			"Redis let the lock go with the shortened lease")
	})
}

// staysOpen fails t if ch closes within d.
func staysOpen(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s closed within %v", what, d)
	case <-time.After(d):
	}
}

// A holding in watchdog mode has no lease to extend: Extend refuses it
// with ErrInvalidArgument naming the lease, and the watchdog keeps
// renewing it as before.
func TestExtendRefusesAWatchdogHolding(t *testing.T) {
	eachExtendable(t, func(t *testing.T, e *env, c extendCase) {
		ctx := testCtx(t)
		mine, other, keys := c.setup(t, e, "extend-watchdog")
		require.NoError(t, mine.Lock(ctx))
		err := mine.Extend(ctx, time.Minute)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "lease")
		assert.ErrorContains(t, err, "watchdog")
		for _, k := range keys {
			assert.LessOrEqual(t, e.rdb.PTTL(ctx, k).Val(), watchdog, "the watchdog's lease, not the minute")
		}
		time.Sleep(2 * watchdog)
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "still renewed")
		assert.False(t, isClosed(mine.Lost()))
		require.NoError(t, mine.Unlock(ctx))
	})
}

// On a read lock Extend is per hold: each of the owner's read holds gets
// the new lease (its own timeout key), other readers' holds keep theirs,
// and the lock lives as long as its longest hold, whoever's. A write
// holder's extend never cuts its own read holds' leases.
func TestExtendOfReadHoldsIsPerHold(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "extend-reads"
	a := e.newClient(t).ReadWriteLock(name)
	b := e.newClient(t).ReadWriteLock(name)
	require.NoError(t, a.ReadLock().LockLease(ctx, 20*time.Second))
	require.NoError(t, a.ReadLock().LockLease(ctx, 20*time.Second))
	require.NoError(t, b.ReadLock().LockLease(ctx, 40*time.Second))
	keyTTL := func(owner string, k int) time.Duration {
		return e.rdb.PTTL(ctx, redisio.ReadTimeoutPrefix(name, owner)+":"+string(rune('0'+k))).Val()
	}

	require.NoError(t, a.ReadLock().Extend(ctx, time.Minute))
	for k := 1; k <= 2; k++ {
		assert.Greater(t, keyTTL(a.ReadLock().Owner(), k), 50*time.Second, "a's hold %d extended", k)
	}
	assert.InDelta(t, 40*time.Second, keyTTL(b.ReadLock().Owner(), 1), float64(5*time.Second), "b's hold untouched")
	assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 50*time.Second, "the lock lives as long as a's holds")

	require.NoError(t, a.ReadLock().Extend(ctx, 5*time.Second))
	for k := 1; k <= 2; k++ {
		assert.LessOrEqual(t, keyTTL(a.ReadLock().Owner(), k), 5*time.Second, "a's hold %d shortened", k)
	}
	assert.InDelta(t, 40*time.Second, e.rdb.PTTL(ctx, name).Val(), float64(5*time.Second),
		"the lock lives as long as b's hold, now the longest")
	require.NoError(t, a.ReadLock().Unlock(ctx))
	require.NoError(t, a.ReadLock().Unlock(ctx))
	require.NoError(t, b.ReadLock().Unlock(ctx))

	// The write holder also reads: shortening the write lease keeps the
	// lock for its read hold.
	require.NoError(t, a.WriteLock().LockLease(ctx, 20*time.Second))
	require.NoError(t, a.ReadLock().LockLease(ctx, 40*time.Second))
	require.NoError(t, a.WriteLock().Extend(ctx, time.Second))
	assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 30*time.Second, "kept for the owner's read hold")
	require.NoError(t, a.WriteLock().Unlock(ctx))
	require.NoError(t, a.ReadLock().Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val())
}

// An Extend that ran in Redis but whose reply timed out has an unknown
// outcome: the call fails, the holding's end is counted as the earlier of
// the old and the new lease, and when it comes the owner is told the
// holding is lost and the holds Redis may keep (the new, longer lease) are
// given back: the lock does not outlive the news by the extended minute.
func TestExtendWithUnknownOutcomeCountsTheEarlierEnd(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	ctx := testCtx(t)
	l := c.Lock("extend-unknown")
	require.NoError(t, l.LockLease(ctx, time.Second))
	var once atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if len(sc.Keys) == 1 && len(sc.Args) == 4 && sc.Args[2] == "" && once.CompareAndSwap(false, true) {
			sc.Run()                                          // applied in Redis...
			return redistest.Failed(context.DeadlineExceeded) // ...but the reply timed out
		}
		return sc.Run()
	})
	start := time.Now()
	require.ErrorIs(t, l.Extend(ctx, time.Minute), context.DeadlineExceeded)
	assert.Greater(t, e.rdb.PTTL(ctx, "extend-unknown").Val(), 50*time.Second, "Redis did extend it")
	await.Value(t, l.Lost(), 5*time.Second, "Lost, at the old lease's end")
	assert.Less(t, time.Since(start), 3*time.Second, "the earlier end counted")
	eventually(t, 3*time.Second, func() bool { return e.rdb.Exists(ctx, "extend-unknown").Val() == 0 },
		"the holds Redis kept were given back")
}
