package client_test

import (
	"context"
	"errors"
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
	t.Parallel()
	both(t, testFairLockOrder)
}

func testFairLockOrder(t *testing.T, e *env) {
	ctx := testCtx(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	holder := clients[0].FairLock("fair-order")
	require.NoError(t, holder.Lock(ctx))
	order, _ := fairOrder(t, e.rdb, clients, holder, 8, func() { e.advance(50 * time.Millisecond) })
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "acquired in arrival order, 50 ms apart")
	assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey("fair-order"), redisio.FairTimeoutKey("fair-order")).Val(),
		"queue and deadlines empty at the end")
}

// fairOrder queues n waiters on the fair lock that holder holds, waiter i
// on clients[i%len(clients)], each once the one before has its place in
// the queue and apart (when not nil) has run; each takes the lock, notes
// its i and releases it. Then holder unlocks. It returns the order the
// waiters took the lock in and how long after the unlock the last one was
// done.
func fairOrder(t *testing.T, rdb redis.Cmdable, clients []*client.Client, holder *client.Lock, n int, apart func()) ([]int, time.Duration) {
	t.Helper()
	ctx := testCtx(t)
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
		if apart != nil {
			apart()
		}
	}
	released := time.Now()
	require.NoError(t, holder.Unlock(ctx))
	await.Group(t, &wg, 30*time.Second, "the fair waiters")
	return order, time.Since(released)
}

func TestFairLockTwoHundredWaitersAllAcquire(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		clients := []*client.Client{e.newClient(t), e.newClient(t)}
		contend(t, 200, 1, 1,
			func(i int) error {
				return clients[i%2].FairLock("fair-200", client.WithOwner(fmt.Sprintf("w-%d", i))).Lock(ctx)
			},
			func(i int) error {
				return clients[i%2].FairLock("fair-200", client.WithOwner(fmt.Sprintf("w-%d", i))).Unlock(ctx)
			})
		assert.Zero(t, e.rdb.Exists(ctx, "fair-200", redisio.FairQueueKey("fair-200"), redisio.FairTimeoutKey("fair-200")).Val(),
			"lock, queue and deadlines gone with the last waiter")
	})
}

// Eight contenders on two clients, 50 ms apart, each taking the lock for a
// fixed lease it never gives back: each gets in when the lease before its
// own ends, in arrival order, with no unlock message to wake it.
func TestFairLockOrderHoldsWhenLeasesEndWithoutUnlock(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name, n, lease = "fair-leases", 8, 200 * time.Millisecond
		clients := []*client.Client{e.newClient(t), e.newClient(t)}
		require.NoError(t, clients[1].FairLock(name).LockLease(ctx, 300*time.Millisecond))
		waiters := newBackground(t, n)
		for i := range n {
			l := clients[i%2].FairLock(name)
			waiters.run(i, func(ctx context.Context) error { return l.LockLease(ctx, lease) })
			eventually(t, 5*time.Second, func() bool { // queued, or in already on a slow machine
				return e.rdb.LPos(ctx, redisio.FairQueueKey(name), l.Owner(), redis.LPosArgs{}).Err() == nil ||
					e.rdb.HExists(ctx, name, l.Owner()).Val()
			}, "waiter queued")
			e.advance(50 * time.Millisecond)
		}
		var order []int
		for range n {
			r, _ := awaitWhileTime(t, e, waiters.C, 10*time.Second, "the next waiter, when the lease before it ends")
			require.NoError(t, r.err, "waiter %d", r.i)
			order = append(order, r.i)
		}
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "acquired in arrival order")
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

// Two waiters of a process that died keep their places until their
// deadlines pass; a live waiter behind them is not given the lock before
// then, and gets it soon after, dropping them from the queue.
func TestFairLockSkipsAbandonedWaiters(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "fair-abandoned"
		c := e.newClient(t)
		holder := c.FairLock(name)
		require.NoError(t, holder.LockLease(ctx, time.Second))

		// Their deadlines: the holder's lease plus 100 ms, then 100 ms more.
		s, err := redisio.NewScripts("publish")
		require.NoError(t, err)
		for _, ghost := range []string{"ghost-1", "ghost-2"} {
			r, _, err := s.FairAcquire(ctx, e.rdb, redisio.ReplicaSync{}, name, ghost, "req-"+ghost,
				time.Second, 100*time.Millisecond, 0, e.clk.Now(), true)
			require.NoError(t, err)
			require.False(t, r.Acquired)
		}
		last, err := e.rdb.ZScore(ctx, redisio.FairTimeoutKey(name), "ghost-2").Result()
		require.NoError(t, err)
		lastDeadline := time.UnixMilli(int64(last))

		waiter := c.FairLock(name)
		got := inBackground(t, func(ctx context.Context) error {
			ok, err := waiter.TryLockWait(ctx, 20*time.Second, 0)
			if err == nil && !ok {
				err = errors.New("TryLockWait gave up")
			}
			return err
		})
		eventually(t, 5*time.Second, func() bool {
			return e.rdb.LPos(ctx, redisio.FairQueueKey(name), waiter.Owner(), redis.LPosArgs{}).Val() == 2
		}, "the live waiter queued behind the ghosts")
		require.NoError(t, holder.Unlock(ctx)) // wakes ghost-1, who is gone
		staysBlocked(t, e, got, lastDeadline.Sub(e.clk.Now())-150*time.Millisecond,
			"the live waiter, before the last ghost's deadline")

		r, _ := awaitWhileTime(t, e, got, 15*time.Second, "the live waiter")
		require.NoError(t, r.err)
		assert.Less(t, e.clk.Now().Sub(lastDeadline), watchdog/3+500*time.Millisecond,
			"past the ghosts within one look-again bound of the last deadline")
		held, err := waiter.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held, "the live waiter got the lock past the abandoned ones")
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name)).Val(),
			"the ghosts were dropped from the queue")
		require.NoError(t, waiter.Unlock(ctx))
	})
}

func TestFairLockDeadlinesDoNotDrift(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
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
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
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

func TestFairTryLockNeverEnqueuesAndLateUnlockIsNotHeld(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		holder, other := c.FairLock("fair-try"), c.FairLock("fair-try")
		require.NoError(t, holder.LockLease(ctx, 300*time.Millisecond))
		ok, err := other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey("fair-try")).Val(), "TryLock took no place")

		e.advance(400 * time.Millisecond)
		eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "fair-try").Val() == 0 }, "the lease ended")
		assert.ErrorIs(t, holder.Unlock(ctx), client.ErrNotHeld, "a fair lock's late unlock is refused, as every kind's")
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		n, _ := other.HoldCount(ctx)
		assert.Equal(t, 1, n)
		require.NoError(t, other.Unlock(ctx))
	})
}

func TestClosingClientGivesUpItsFairWaitersPlaces(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
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

// Redis stops serving writes (CLIENT PAUSE WRITE) while a fair
// TryLockWait is waiting for its place (Redisson #5019): the call gives up
// without hanging, and once Redis serves writes again no place of its is
// left in the queue for the waiters behind it to wait on. A wait that runs
// out while its attempt is in flight is answered by that attempt (so a
// Redis error is reported as one, API.md), here when the pause ends; a
// context ends it at once. Real Redis only: miniredis has no CLIENT PAUSE.
func TestFairTryLockWaitDuringAPauseLeavesNoPlace(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	const name = "fair-pause"
	e := realEnv(t)
	holder := e.newClient(t).FairLock(name)
	require.NoError(t, holder.LockLease(ctx, time.Minute))
	waiter := e.newClient(t).FairLock(name)
	ok, err := waiter.TryLock(ctx) // opens the waiter client's connections before the pause
	require.NoError(t, err)
	require.False(t, ok)

	const pause = 2 * time.Second
	require.NoError(t, e.rdb.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err())
	paused := time.Now()
	got := inBackground(t, func(ctx context.Context) error {
		ok, err := waiter.TryLockWait(ctx, 500*time.Millisecond, 0)
		if err == nil && ok {
			return errors.New("TryLockWait took a held lock")
		}
		return err
	})
	r := await.Value(t, got, 15*time.Second, "TryLockWait during the pause")
	if r.err != nil {
		require.ErrorIs(t, r.err, client.ErrNotObtained)
	}
	t.Logf("TryLockWait(500ms) returned after %v of a %v pause: %v", r.at.Sub(paused).Round(time.Millisecond), pause, r.err)

	time.Sleep(time.Until(paused.Add(pause))) // the pause ends
	eventually(t, 5*time.Second, func() bool {
		return e.rdb.Exists(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name)).Val() == 0
	}, "no place of the waiter left in the queue")
	held, err := holder.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "the holder kept the lock")
	require.NoError(t, holder.Unlock(ctx))
	ok, err = waiter.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the lock is free for the waiter after the holder's unlock")
	require.NoError(t, waiter.Unlock(ctx))
}

// A fair waiter's own channel stays subscribed while other waiters remain,
// so that its owner waiting again costs no new subscription; once nobody
// waits, every channel is unsubscribed.
func TestFairWaiterChannelsLingerWhileOthersWait(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	holder, w1, w2, w3 := c.FairLock("linger"), c.FairLock("linger"), c.FairLock("linger"), c.FairLock("linger")
	queued := func(n int64) func() bool {
		return func() bool { return e.rdb.LLen(ctx, "redisson_lock_queue:{linger}").Val() == n }
	}
	listeners := func(l *client.Lock) int64 {
		ch := "redisson_lock__channel:{linger}:" + l.Owner()
		return e.rdb.PubSubNumSub(ctx, ch).Val()[ch]
	}
	require.NoError(t, holder.Lock(ctx))
	var got []<-chan returned
	for i, w := range []*client.Lock{w1, w2, w3} {
		got = append(got, inBackground(t, w.Lock))
		eventually(t, 5*time.Second, queued(int64(i+1)), "the waiters queue in turn")
	}
	eventually(t, 5*time.Second, func() bool { return listeners(w1) == 1 && listeners(w2) == 1 && listeners(w3) == 1 },
		"every waiter listens")
	subscribes := commandCalls(t, e.rdb, "subscribe")

	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, await.Value(t, got[0], 5*time.Second, "w1's Lock").err)
	assert.Equal(t, int64(1), listeners(w1), "w1's channel stays subscribed while others wait")
	require.NoError(t, w1.Unlock(ctx))
	require.NoError(t, await.Value(t, got[1], 5*time.Second, "w2's Lock").err)
	again := inBackground(t, w1.Lock) // w3 still waits
	eventually(t, 5*time.Second, queued(2), "w1 queues again behind w3")
	require.NoError(t, w2.Unlock(ctx))
	require.NoError(t, await.Value(t, got[2], 5*time.Second, "w3's Lock").err)
	require.NoError(t, w3.Unlock(ctx))
	require.NoError(t, await.Value(t, again, 5*time.Second, "w1's second Lock").err)
	assert.Equal(t, subscribes, commandCalls(t, e.rdb, "subscribe"), "waiting again subscribed nothing anew")
	require.NoError(t, w1.Unlock(ctx))
	eventually(t, 5*time.Second, func() bool { return listeners(w1)+listeners(w2)+listeners(w3) == 0 },
		"nobody waits: every channel unsubscribed")
}
