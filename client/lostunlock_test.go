package client_test

import (
	"context"
	"errors"
	"strings"
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

// fairKinds are the two fair locks, by the Client method that makes them.
var fairKinds = []struct {
	kind string
	make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
}{
	{"fair", (*client.Client).FairLock},
	{"nonreentrant-fair", (*client.Client).NonReentrantFairLock},
}

// A fair lock keeps Lock.Unlock's contract: an Unlock by an owner that
// does not hold it (the lease ran out, it was force-unlocked and another
// owner came and went, it never held) is ErrNotHeld, the holding's Lost
// closes even when no renewal ran first, Do reports the loss and a
// MultiLock of fair members keeps the member's error. The unlock of a free
// lock still wakes the queue's head on its own channel, as Redisson's does.
func TestFairUnlockOfAHoldingThatIsGoneIsNotHeld(t *testing.T) {
	t.Parallel()
	for _, k := range fairKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			c := e.newClient(t, client.WithWatchdogTimeout(time.Minute)) // no renewal runs in this test
			name := "fair-gone:" + k.kind

			// Never held.
			assert.ErrorIs(t, k.make(c, name).Unlock(ctx), client.ErrNotHeld, "a handle that never held")

			// Force-unlocked, then another owner came and went.
			holder, other := k.make(c, name), k.make(c, name)
			require.NoError(t, holder.Lock(ctx))
			lost := holder.Lost()
			_, err := other.ForceUnlock(ctx)
			require.NoError(t, err)
			require.NoError(t, other.Lock(ctx))
			require.NoError(t, other.Unlock(ctx))
			assert.ErrorIs(t, holder.Unlock(ctx), client.ErrNotHeld, "the force-unlocked holder")
			assert.True(t, isClosed(lost), "its Lost closed though no renewal ran")

			// The lease ran out in Redis (the key deleted behind the
			// engine's back, as a lease the engine counts long would).
			require.NoError(t, holder.LockLease(ctx, time.Minute))
			lost = holder.Lost()
			require.NoError(t, e.rdb.Del(ctx, name).Err())
			assert.ErrorIs(t, holder.Unlock(ctx), client.ErrNotHeld, "the holder whose lock expired")
			assert.True(t, isClosed(lost))

			// A free lock's unlock wakes the queue's head (here a place
			// written as a Redisson client writes it).
			const head = "7a0c1d2e-redisson:9"
			sub := e.rdb.Subscribe(ctx, redisio.FairChannel(name, head))
			defer sub.Close()
			_, err = sub.ReceiveTimeout(ctx, 5*time.Second)
			require.NoError(t, err)
			require.NoError(t, e.rdb.RPush(ctx, redisio.FairQueueKey(name), head).Err())
			require.NoError(t, e.rdb.ZAdd(ctx, redisio.FairTimeoutKey(name),
				redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: head}).Err())
			assert.ErrorIs(t, k.make(c, name).Unlock(ctx), client.ErrNotHeld)
			msg := await.Value(t, sub.Channel(), 5*time.Second, "the head's wake-up")
			assert.Equal(t, "0", msg.Payload)
			require.NoError(t, e.rdb.Del(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name)).Err())

			// Do: force-unlocked, and another owner came and went, while
			// fn ran.
			err = holder.Do(ctx, func(context.Context) error {
				if _, err := other.ForceUnlock(ctx); err != nil {
					return err
				}
				if err := other.Lock(ctx); err != nil {
					return err
				}
				return other.Unlock(ctx)
			})
			assert.ErrorIs(t, err, client.ErrLockLost, "Do tells the holder someone else was inside")

			// A MultiLock of fair members keeps the member's error.
			a, b := k.make(c, name+":a"), k.make(c, name+":b")
			m := client.NewMultiLock(a, b)
			require.NoError(t, m.Lock(ctx))
			_, err = k.make(c, name+":b").ForceUnlock(ctx)
			require.NoError(t, err)
			assert.ErrorIs(t, m.Unlock(ctx), client.ErrNotHeld, "the MultiLock's force-unlocked member")
			locked, err := a.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "the other member was released")
		})
	}
}

// An Unlock called as soon as Lost closed never says released, for every
// lock kind with Lost: with a fixed lease the engine counts the holding
// lost a little before Redis lets the key go, and the Unlock then returns
// an error matching ErrLockLost and ErrNotHeld (before, it returned nil in
// most tries). What Redis had left of the holding is deleted all the same:
// a contender takes the lock at once.
func TestUnlockRightAfterLostIsNeverReleased(t *testing.T) {
	eachMutex(t, func(t *testing.T, e *env, mc mutexCase) {
		ctx := testCtx(t)
		s := mc.setup(t, e, "lost-unlock")
		const tries = 10
		const lease = 150 * time.Millisecond
		released, outlived := 0, 0
		for i := 0; i < tries; i++ {
			if err := s.m.LockLease(ctx, lease); errors.Is(err, client.ErrLockLost) && outlived < tries {
				// Under load an acquire's answer can come after its 150 ms
				// lease ran out: the engine gives the hold back and says so.
				// Nothing was held, so there is no Unlock to try: again.
				outlived++
				t.Logf("try %d: %v", i, err)
				i--
				continue
			} else if err != nil {
				t.Fatalf("try %d: %v", i, err)
			}
			await.Value(t, s.m.Lost(), 5*time.Second, "Lost, once the lease ran out")
			err := s.m.Unlock(ctx)
			if err == nil {
				released++
				continue
			}
			assert.True(t, errors.Is(err, client.ErrLockLost) || errors.Is(err, client.ErrNotHeld),
				"try %d: %v", i, err)
			ok, err := s.other.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "try %d: nothing is left of the lost holding", i)
			require.NoError(t, s.other.Unlock(ctx))
		}
		assert.Zero(t, released, "Unlocks right after Lost that said released, of %d", tries)
	})
}

// A reentrant holding (two holds) reported lost while Redis still has it
// (the engine's clock ran ahead): its Unlock matches ErrLockLost and
// ErrNotHeld and deletes both holds, for the reentrant and the fair lock.
func TestUnlockOfALostReentrantHoldingDeletesWhatIsLeft(t *testing.T) {
	t.Parallel()
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			e := miniEnv(t)
			ctx := testCtx(t)
			name := "lost-reentrant:" + k.name
			l := k.of(e.newClient(t), name)
			require.NoError(t, l.LockLease(ctx, time.Minute))
			require.NoError(t, l.LockLease(ctx, time.Minute))
			// The engine's clock passes the lease; Redis's stays behind.
			e.fake.Advance(time.Minute)
			await.Value(t, l.Lost(), 5*time.Second, "Lost")
			require.Equal(t, "2", e.rdb.HGet(ctx, name, l.Owner()).Val(), "Redis still has both holds")
			err := l.Unlock(ctx)
			assert.ErrorIs(t, err, client.ErrLockLost)
			assert.ErrorIs(t, err, client.ErrNotHeld)
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "what was left is gone")
			assert.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld, "and a second Unlock finds nothing")
		})
	}
}

// An Unlock of a lost holding leaves a newer holding of the same owner
// alone: A held twice and was reported lost while Redis still had both
// holds; B, a handle of the same owner, locked again (Redis counts 3, the
// newer holding's). A's Unlock is not released and changes nothing; B
// still holds, its Lost open, and its Unlocks release the holds. With no
// newer holding, the lost one's holds go at once, and their TTL is never
// stretched to the watchdog's meanwhile.
func TestUnlockOfALostHoldingLeavesTheOwnersNewerHolding(t *testing.T) {
	t.Parallel()
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			e := miniEnv(t)
			ctx := testCtx(t)
			c := e.newClient(t)
			name := "lost-newer:" + k.name
			a := k.of(c, name)
			b := k.of(c, name, client.WithOwner(a.Owner()))
			require.NoError(t, a.LockLease(ctx, time.Minute))
			require.NoError(t, a.LockLease(ctx, time.Minute))
			e.fake.Advance(time.Minute) // the engine's clock passes the lease; Redis's stays behind
			await.Value(t, a.Lost(), 5*time.Second, "A's Lost")
			require.NoError(t, b.LockLease(ctx, time.Minute))
			require.Equal(t, "3", e.rdb.HGet(ctx, name, a.Owner()).Val(), "B's holding has the holds A left")
			bLost := b.Lost()

			err := a.Unlock(ctx)
			assert.ErrorIs(t, err, client.ErrLockLost)
			assert.ErrorIs(t, err, client.ErrNotHeld)
			assert.Equal(t, "3", e.rdb.HGet(ctx, name, a.Owner()).Val(), "A's Unlock left B's holds alone")
			held, err := b.IsHeld(ctx)
			require.NoError(t, err)
			assert.True(t, held, "B still holds")
			assert.False(t, isClosed(bLost), "B's Lost is open")
			for i := range 3 {
				require.NoError(t, b.Unlock(ctx), "B's unlock %d", i)
			}
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "B's last unlock freed it")
			assert.False(t, isClosed(bLost), "B's holding ended as a release")

			// No newer holding: the lost holding's three holds go at once,
			// and the lease of what is left is never the watchdog's.
			for range 3 {
				require.NoError(t, a.LockLease(ctx, time.Minute))
			}
			e.fake.Advance(time.Minute)
			await.Value(t, a.Lost(), 5*time.Second, "A's Lost")
			err = a.Unlock(ctx)
			assert.ErrorIs(t, err, client.ErrLockLost)
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "what was left of A is gone")
		})
	}
}

// lostSetEnvs are n servers (miniredis), each with a Client on a fake
// clock of its own, so that one member's lease can run out in its
// engine while the others' do not, and no lease runs out in Redis.
func lostSetEnvs(t *testing.T, n int) ([]*env, []*client.Client) {
	envs, clients := make([]*env, n), make([]*client.Client, n)
	for i := range n {
		envs[i] = miniEnv(t)
		clients[i] = envs[i].newClient(t)
	}
	return envs, clients
}

// A MultiLock taken twice, one of whose members is lost: its Unlock
// releases every hold the holding has left on the other member too
// (before, one hold stayed there, renewed, until a second Unlock), ends
// the holding, and a second Unlock finds nothing held.
func TestMultiLockUnlockOfALostReentrantHoldingReleasesEveryMember(t *testing.T) {
	t.Parallel()
	envs, clients := lostSetEnvs(t, 2)
	ctx := testCtx(t)
	const name = "multi-lost-reentrant"
	m := client.NewMultiLock(members(clients, name)...)
	require.NoError(t, m.LockLease(ctx, time.Minute))
	require.NoError(t, m.LockLease(ctx, time.Minute))
	lost := m.Lost()
	envs[0].fake.Advance(time.Minute) // member 0's lease runs out in its engine
	await.Value(t, lost, 5*time.Second, "the MultiLock's Lost")
	require.Equal(t, int64(1), envs[1].rdb.Exists(ctx, name).Val(), "member 1 is still held")

	err := m.Unlock(ctx)
	assert.ErrorIs(t, err, client.ErrLockLost)
	assert.ErrorIs(t, err, client.ErrNotHeld)
	for i, e := range envs {
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "member %d has nothing left of the holding", i)
	}
	assert.ErrorIs(t, m.Unlock(ctx), client.ErrNotHeld, "the holding is over")
	ok, err := client.NewMultiLock(members(clients, name)...).TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "another owner takes the set at once")
}

// A RedLock taken twice that lost a majority: its Unlock releases every
// hold it has left on the master still held, and ends the holding.
func TestRedLockUnlockOfALostReentrantHoldingReleasesEveryMaster(t *testing.T) {
	envs, clients := lostSetEnvs(t, 3)
	ctx := testCtx(t)
	const name = "red-lost-reentrant"
	r := client.NewRedLock(members(clients, name)...)
	require.NoError(t, r.LockLease(ctx, time.Minute))
	require.NoError(t, r.LockLease(ctx, time.Minute))
	for _, e := range envs {
		require.Equal(t, int64(1), e.rdb.Exists(ctx, name).Val(), "every master granted it")
	}
	lost := r.Lost()
	envs[0].fake.Advance(time.Minute) // a majority's leases run out in their engines
	envs[1].fake.Advance(time.Minute)
	await.Value(t, lost, 5*time.Second, "the RedLock's Lost")
	require.Equal(t, int64(1), envs[2].rdb.Exists(ctx, name).Val(), "master 2 is still held")

	err := r.Unlock(ctx)
	assert.ErrorIs(t, err, client.ErrLockLost)
	assert.ErrorIs(t, err, client.ErrNotHeld)
	for i, e := range envs {
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "master %d has nothing left of the holding", i)
	}
	assert.ErrorIs(t, r.Unlock(ctx), client.ErrNotHeld, "the holding is over")
	ok, err := client.NewRedLock(members(clients, name)...).TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "another owner takes it at once")
}

// The releases of what is left of a lost holding never stretch its TTL to
// the watchdog timeout: when the second of them fails, Redis lets the
// holds left go within a second (before, the first release had set them
// to the watchdog timeout, a minute here, with nobody renewing them or
// knowing they were there).
func TestUnlockOfALostHoldingNeverStretchesItsTTL(t *testing.T) {
	t.Parallel()
	fake := clockwork.NewFakeClock()
	e, h := hookedEnv(t, fake)
	c := e.newClient(t, client.WithWatchdogTimeout(time.Minute))
	ctx := testCtx(t)
	const name = "lost-ttl"
	l := c.Lock(name)
	for range 3 {
		require.NoError(t, l.LockLease(ctx, time.Minute))
	}
	fake.Advance(time.Minute) // the engine's clock passes the lease; Redis's stays behind
	await.Value(t, l.Lost(), 5*time.Second, "Lost")
	var unlocks atomic.Int64
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if len(sc.Keys) == 3 && sc.Keys[0] == name && strings.HasPrefix(sc.Keys[2], "warden_unlock:") &&
			unlocks.Add(1) == 2 {
			return redistest.Failed(errors.New("injected: the second release fails"))
		}
		return sc.Run()
	})
	err := l.Unlock(ctx)
	assert.ErrorIs(t, err, client.ErrLockLost)
	assert.Equal(t, "2", e.rdb.HGet(ctx, name, l.Owner()).Val(), "the first release ran, the second failed")
	ttl := e.rdb.PTTL(ctx, name).Val()
	assert.Positive(t, ttl)
	assert.LessOrEqual(t, ttl, time.Second, "what is left expires within a second")
}
