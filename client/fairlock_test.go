package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

func TestFairLockOrderIsArrivalOrderAcrossClients(t *testing.T) {
	both(t, testFairLockOrder)
}

func testFairLockOrder(t *testing.T, e *env) {
	ctx := context.Background()
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	holder := clients[0].FairLock("fair-order")
	require.NoError(t, holder.Lock(ctx))
	order, _ := fairOrder(t, e.rdb, clients, holder, 8)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "acquired in arrival order")
	assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey("fair-order"), redisio.FairTimeoutKey("fair-order")).Val(),
		"queue and deadlines empty at the end")
}

// fairOrder queues n waiters on the fair lock that holder holds, waiter i
// on clients[i%len(clients)], each once the one before has its place in
// the queue; each takes the lock, notes its i and releases it. Then holder
// unlocks. It returns the order the waiters took the lock in and how long
// after the unlock the last one was done.
func fairOrder(t *testing.T, rdb redis.Cmdable, clients []*client.Client, holder *client.Lock, n int) ([]int, time.Duration) {
	t.Helper()
	ctx := context.Background()
	name := holder.Name()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		l := clients[i%len(clients)].FairLock(name)
		wg.Go(func() {
			if err := l.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
		eventually(t, 5*time.Second, func() bool {
			return rdb.LPos(ctx, redisio.FairQueueKey(name), l.Owner(), redis.LPosArgs{}).Err() == nil
		}, "waiter queued")
	}
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	await.Group(t, &wg, 30*time.Second, "the fair waiters")
	return order, time.Since(released)
}

func TestFairLockTwoHundredWaitersAllAcquire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := realEnv(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	contend(t, 200, 1, 1,
		func(i int) error {
			return clients[i%2].FairLock("fair-200", client.WithOwner(fmt.Sprintf("w-%d", i))).Lock(ctx)
		},
		func(i int) error {
			return clients[i%2].FairLock("fair-200", client.WithOwner(fmt.Sprintf("w-%d", i))).Unlock(ctx)
		})
}

func TestFairLockContention(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		locks := make([]*client.Lock, 6)
		for i := range locks {
			locks[i] = e.newClient(t).FairLock("fair-contention")
		}
		contendLocks(t, locks, 40)
	})
}

func TestFairLockSkipsAbandonedWaiters(t *testing.T) {
	ctx := context.Background()
	e := realEnv(t)
	c := e.newClient(t)
	holder := c.FairLock("fair-abandoned")
	require.NoError(t, holder.LockLease(ctx, time.Second))

	// Two waiters of a process that died: their places in the queue stay
	// until their deadlines pass: the holder's lease, then 100 ms each.
	s, err := redisio.NewScripts("publish")
	require.NoError(t, err)
	for _, ghost := range []string{"ghost-1", "ghost-2"} {
		r, _, err := s.FairAcquire(ctx, e.rdb, redisio.ReplicaSync{}, "fair-abandoned", ghost, "req-"+ghost,
			time.Second, 100*time.Millisecond, time.Now(), true)
		require.NoError(t, err)
		require.False(t, r.Acquired)
	}
	waiter := c.FairLock("fair-abandoned")
	got := make(chan error, 1)
	go func() { _, err := waiter.TryLockWait(ctx, 20*time.Second, 0); got <- err }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, holder.Unlock(ctx)) // wakes ghost-1, who is gone
	require.NoError(t, await.Value(t, got, 15*time.Second, "the live waiter"))
	held, err := waiter.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "the live waiter got the lock past the abandoned ones")
	assert.Less(t, time.Since(start), 1200*time.Millisecond+watchdog/3+500*time.Millisecond,
		"past the ghosts' deadlines within one look-again bound")
	require.NoError(t, waiter.Unlock(ctx))
}

func TestFairLockDeadlinesDoNotDrift(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.newClient(t)
		holder := c.FairLock("fair-drift")
		require.NoError(t, holder.LockLease(ctx, 5*time.Second))
		const wait = 20 * time.Millisecond
		for range 30 {
			l := c.FairLock("fair-drift")
			got := make(chan bool, 1)
			go func() {
				ok, err := l.TryLockWait(ctx, wait, 0)
				assert.NoError(t, err)
				got <- ok
			}()
			ok, _ := awaitWhileTime(t, e, got, time.Second, "a short wait")
			require.False(t, ok)
		}
		// Each waiter that gave up pulled the deadlines behind it forward:
		// none is left, and none can have drifted past lease + allowance.
		eventually(t, 5*time.Second, func() bool {
			return e.rdb.LLen(ctx, redisio.FairQueueKey("fair-drift")).Val() == 0
		}, "the waiters left the queue")
		for _, z := range e.rdb.ZRangeWithScores(ctx, redisio.FairTimeoutKey("fair-drift"), 0, -1).Val() {
			assert.LessOrEqual(t, int64(z.Score), e.clk.Now().Add(5*time.Second+wait).UnixMilli())
		}
		// A later waiter is not held back by the ones that left.
		w := c.FairLock("fair-drift")
		got := make(chan error, 1)
		go func() { _, err := w.TryLockWait(ctx, 10*time.Second, 0); got <- err }()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, holder.Unlock(ctx))
		err, _ := awaitWhileTime(t, e, got, time.Second, "the waiter")
		require.NoError(t, err)
		held, _ := w.IsHeld(ctx)
		assert.True(t, held)
	})
}

func TestFairLockHeadWakesWhenTheHoldersLeaseEnds(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.newClient(t)
		require.NoError(t, c.FairLock("fair-expiry").LockLease(ctx, 500*time.Millisecond)) // never unlocked
		w := c.FairLock("fair-expiry")
		got := make(chan bool, 1)
		go func() {
			ok, err := w.TryLockWait(ctx, 30*time.Second, 0)
			assert.NoError(t, err)
			got <- ok
		}()
		ok, took := awaitWhileTime(t, e, got, 5*time.Second, "the head waiter")
		assert.True(t, ok)
		assert.Less(t, took, 2*time.Second, "woken by the lease's end, not its 30 s wait (Redisson #3730)")
	})
}

func TestFairTryLockNeverEnqueuesAndLateUnlockSucceeds(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.newClient(t)
		holder, other := c.FairLock("fair-try"), c.FairLock("fair-try")
		require.NoError(t, holder.LockLease(ctx, 300*time.Millisecond))
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey("fair-try")).Val(), "TryLock took no place")

		e.advance(400 * time.Millisecond)
		eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "fair-try").Val() == 0 }, "the lease ended")
		assert.NoError(t, holder.Unlock(ctx), "a fair lock's late unlock succeeds, as Redisson's")
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		n, _ := other.HoldCount(ctx)
		assert.Equal(t, 1, n)
		require.NoError(t, other.Unlock(ctx))
	})
}

func TestClosingClientGivesUpItsFairWaitersPlaces(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		holder := e.newClient(t).FairLock("fair-close")
		require.NoError(t, holder.LockLease(ctx, 10*time.Second))
		c := e.newClient(t)
		got := make(chan error, 1)
		go func() { got <- c.FairLock("fair-close").Lock(ctx) }()
		eventually(t, 2*time.Second, func() bool {
			return e.rdb.LLen(ctx, redisio.FairQueueKey("fair-close")).Val() == 1
		}, "the waiter took its place")
		e.close(t, c)
		require.ErrorIs(t, await.Value(t, got, 5*time.Second, "the waiter"), client.ErrClosed)
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey("fair-close"), redisio.FairTimeoutKey("fair-close")).Val(),
			"no place left behind for the others to wait on")
	})
}
