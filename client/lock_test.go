package client_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// lockKind is one of the two kinds a *client.Lock comes in: a plain
// reentrant lock or a fair one. The behaviours a fair lock shares with the
// plain one run on both (eachKind).
type lockKind struct {
	name string
	of   func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
	fair bool
}

var lockKinds = []lockKind{
	{name: "lock", of: (*client.Client).Lock},
	{name: "fair", of: (*client.Client).FairLock, fair: true},
}

// assertLateUnlock checks what an Unlock of a lock that nobody holds any
// more returned: ErrNotHeld, for a fair lock too (SPEC §3).
func assertLateUnlock(t *testing.T, _ lockKind, err error, what string) {
	t.Helper()
	assert.ErrorIs(t, err, client.ErrNotHeld, what)
}

// eachKind runs fn for a plain and a fair lock, each on both tiers.
func eachKind(t *testing.T, fn func(t *testing.T, e *env, k lockKind)) {
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			both(t, func(t *testing.T, e *env) { fn(t, e, k) })
		})
	}
}

func TestReentrancyAndHoldCount(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l, other := k.of(c, "reentrant"), k.of(c, "reentrant")
		n, err := l.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 0, n)

		require.NoError(t, l.Lock(ctx))
		n, _ = l.HoldCount(ctx)
		assert.Equal(t, 1, n)
		require.NoError(t, l.Unlock(ctx))
		n, _ = l.HoldCount(ctx)
		assert.Equal(t, 0, n)

		ok, err := l.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = l.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the owner re-enters")
		n, _ = l.HoldCount(ctx)
		assert.Equal(t, 2, n)
		assert.Equal(t, "2", e.rdb.HGet(ctx, "reentrant", l.Owner()).Val(), "Redis count matches")

		require.NoError(t, l.Unlock(ctx))
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "still held once by its owner")
		require.NoError(t, l.Unlock(ctx))
		n, _ = l.HoldCount(ctx)
		assert.Equal(t, 0, n)
		ok, err = other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "free after the last unlock")
		require.NoError(t, other.Unlock(ctx))
	})
}

func TestWithOwnerSharesHolding(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		a := k.of(c, "shared", client.WithOwner("svc:worker-1"))
		b := k.of(c, "shared", client.WithOwner("svc:worker-1"))
		require.Equal(t, "svc:worker-1", a.Owner())
		require.NoError(t, a.Lock(ctx))
		ok, err := b.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "same owner re-enters through another handle")
		n, _ := a.HoldCount(ctx)
		assert.Equal(t, 2, n)
		require.NoError(t, b.Unlock(ctx))
		require.NoError(t, a.Unlock(ctx))
		locked, _ := a.IsLocked(ctx)
		assert.False(t, locked)

		// Both handles of the owner are told when their shared holding is lost.
		require.NoError(t, a.Lock(ctx))
		require.NoError(t, b.Lock(ctx))
		lostA, lostB := a.Lost(), b.Lost()
		require.NoError(t, e.rdb.Del(ctx, "shared").Err())
		e.advance(watchdog / 2)
		for _, lost := range []<-chan struct{}{lostA, lostB} {
			await.Value(t, lost, 3*time.Second, "each handle of the owner told of the loss")
		}
	})
}

func TestUnlockByNonOwnerFailsAndChangesNothing(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		holder, intruder := k.of(c, "guarded"), k.of(c, "guarded")
		require.NoError(t, holder.LockLease(ctx, time.Hour))
		before := e.rdb.HGetAll(ctx, "guarded").Val()

		err := intruder.Unlock(ctx)
		require.ErrorIs(t, err, client.ErrNotHeld)
		assert.Equal(t, before, e.rdb.HGetAll(ctx, "guarded").Val())
		held, err := holder.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		ttl, err := holder.RemainTTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, 59*time.Minute)

		require.ErrorIs(t, intruder.Unlock(ctx), client.ErrNotHeld, "never held")
		require.NoError(t, holder.Unlock(ctx))
		assertLateUnlock(t, k, holder.Unlock(ctx), "already released")
	})
}

func TestLeaseExpiryFreesTheLock(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		first, second := k.of(c, "expiring"), k.of(c, "expiring")
		require.NoError(t, first.LockLease(ctx, 500*time.Millisecond))
		lost := first.Lost()
		ok, err := second.TryLock(ctx)
		require.NoError(t, err)
		require.False(t, ok)

		e.advance(600 * time.Millisecond)
		await.Value(t, lost, time.Second, "Lost() when the lease ran out without an unlock")
		ok, err = second.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "free once the lease ran out")

		require.ErrorIs(t, first.Unlock(ctx), client.ErrNotHeld, "the expired owner no longer holds it")
		require.NoError(t, second.Unlock(ctx))

		// An owner that unlocks before the lease ends is not told of a loss.
		require.NoError(t, first.LockLease(ctx, 300*time.Millisecond))
		kept := first.Lost()
		require.NoError(t, first.Unlock(ctx))
		e.advance(400 * time.Millisecond)
		requireOpen(t, kept, "an unlocked holding reported lost")
	})
}

// Each holding has a channel of its own. A handle reuses the channel of a
// holding that ended unlost only when Lost never handed it out: a channel
// a caller kept is never closed by a later holding's loss, and the reused
// one closes when its new holding is lost.
func TestLostChannelsOfEndedHoldingsStayOpen(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "channels")
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx)) // its channel, never handed out, serves the next holding

		require.NoError(t, l.Lock(ctx))
		kept := l.Lost()
		require.NoError(t, l.Unlock(ctx))

		require.NoError(t, l.LockLease(ctx, 300*time.Millisecond))
		lost := l.Lost()
		require.NotEqual(t, kept, lost, "a handed-out channel is not reused")
		e.advance(400 * time.Millisecond)
		await.Value(t, lost, time.Second, "the holding's channel closed when its lease ran out")
		requireOpen(t, kept, "an ended holding's channel closed by a later holding's loss")
		assert.Equal(t, lost, l.Lost(), "a lost holding keeps returning its closed channel")
		assertLateUnlock(t, k, l.Unlock(ctx), "the lease ran out")
	})
}

func TestWatchdogKeepsTheLockAlive(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "watched")
		require.NoError(t, l.Lock(ctx))
		e.advance(5 * watchdog)
		held, err := l.IsHeld(ctx)
		require.NoError(t, err)
		require.True(t, held, "renewed across five watchdog timeouts")
		ttl, err := l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, watchdog/3)
		requireOpen(t, l.Lost(), "a renewed lock reported lost")
		require.NoError(t, l.Unlock(ctx))
		locked, _ := l.IsLocked(ctx)
		assert.False(t, locked)
	})
}

func TestExplicitLeaseIsNotRenewed(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "leased")
		require.NoError(t, l.LockLease(ctx, 1500*time.Millisecond))
		e.advance(1100 * time.Millisecond)
		ttl, err := l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, 400*time.Millisecond, "not renewed")
		e.advance(600 * time.Millisecond)
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
	})
}

func TestReentrantLeaseIsKept(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "lease-kept")
		for range 3 {
			require.NoError(t, l.LockLease(ctx, 10*time.Second))
		}
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, l.Unlock(ctx))
		ttl, err := l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.Greater(t, ttl, 9*time.Second, "unlock refreshes to the holding's lease, not the watchdog's")
		assert.LessOrEqual(t, ttl, 10*time.Second)

		require.NoError(t, l.Lock(ctx), "a watchdog-mode reentry")
		ttl, err = l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, watchdog, "back to the watchdog timeout")
		e.advance(3 * watchdog)
		held, err := l.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held, "and renewed by the watchdog from then on")
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, l.Unlock(ctx))
		locked, _ := l.IsLocked(ctx)
		assert.False(t, locked)
	})
}

func TestTryLockWaitGivesUpAfterItsWait(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		holder, waiter := k.of(c, "busy"), k.of(c, "busy")
		require.NoError(t, holder.LockLease(ctx, time.Minute))
		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() {
			ok, err := waiter.TryLockWait(ctx, 500*time.Millisecond, 0)
			done <- result{ok, err}
		}()
		r, took := awaitWhileTime(t, e, done, 3*time.Second, "TryLockWait")
		require.NoError(t, r.err)
		assert.False(t, r.ok)
		assert.GreaterOrEqual(t, took, 490*time.Millisecond, "not before its wait ran out")
		assert.Less(t, took, 2*time.Second, "soon after its wait ran out")
		require.NoError(t, holder.Unlock(ctx))
	})
}

func TestWaiterWakesOnUnlockMessage(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		holderClient, waiterClient := e.newClient(t), e.newClient(t)
		holder, waiter := k.of(holderClient, "handoff"), k.of(waiterClient, "handoff")
		require.NoError(t, holder.LockLease(ctx, time.Minute), "a long lease: polling on the PTTL would take a minute")

		channel := redisio.LockChannel("handoff")
		if k.fair {
			channel = redisio.FairChannel("handoff", waiter.Owner()) // the waiter's own
		}
		woke := wokenBy(t, waiter.Lock, func() bool {
			return e.rdb.PubSubNumSub(ctx, channel).Val()[channel] == 1
		}, holder.Unlock)
		assert.Less(t, woke, 2*time.Second, "woken by pub/sub, not by the minute-long lease")
		require.NoError(t, waiter.Unlock(ctx))
		eventually(t, 2*time.Second, func() bool {
			return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 0
		}, "the subscription ends with the last waiter")
	})
}

func TestLostUnlockMessageCostsAtMostThePTTL(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		holderClient, waiterClient := e.newClient(t), e.newClient(t)
		holder, waiter := holderClient.Lock("lost-msg"), waiterClient.Lock("lost-msg")
		start := e.clk.Now()
		require.NoError(t, holder.LockLease(ctx, 800*time.Millisecond))
		done := make(chan error, 1)
		go func() { done <- waiter.Lock(ctx) }()
		// The holder's lock vanishes without an unlock message (expiry, or a
		// message lost with the pub/sub connection): the waiter must still get
		// in within the holder's remaining lease.
		err, _ := awaitWhileTime(t, e, done, 3*time.Second, "the waiter, without an unlock message")
		require.NoError(t, err)
		took := e.clk.Now().Sub(start)
		assert.GreaterOrEqual(t, took, 700*time.Millisecond, "not before the lease ends")
		assert.Less(t, took, 2500*time.Millisecond, "soon after the lease ends")
		require.NoError(t, waiter.Unlock(ctx))
	})
}

func TestForceUnlock(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		holder := k.of(c, "forced")
		require.NoError(t, holder.Lock(ctx))
		lost := holder.Lost()

		fresh := k.of(e.newClient(t), "forced")
		ok, err := fresh.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		locked, err := fresh.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)
		ok, err = fresh.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "nothing left to delete")

		e.advance(watchdog / 2)
		await.Value(t, lost, 2*time.Second, "the holder told its lock was force-unlocked")
		assertLateUnlock(t, k, holder.Unlock(ctx), "the force-unlocked holder")
	})
}

func TestQueries(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l, other := k.of(c, "queried"), k.of(c, "queried")
		_, err := l.RemainTTL(ctx)
		require.ErrorIs(t, err, client.ErrNotLocked)
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked)

		require.NoError(t, l.LockLease(ctx, time.Hour))
		ttl, err := l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.InDelta(t, float64(time.Hour), float64(ttl), float64(time.Second))
		for _, h := range []*client.Lock{l, other} {
			locked, err = h.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked, "visible to every handle")
		}
		held, _ := l.IsHeld(ctx)
		assert.True(t, held)
		held, _ = other.IsHeld(ctx)
		assert.False(t, held)
		require.NoError(t, l.Unlock(ctx))
		held, _ = l.IsHeld(ctx)
		assert.False(t, held)

		require.NoError(t, e.rdb.HSet(ctx, "queried", "foreign", 1).Err())
		ttl, err = l.RemainTTL(ctx)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), ttl, "exists without a TTL")
	})
}

func TestManyClientsKeepACounterExact(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const clients, iterations = 8, 200
		var holders, maxHolders atomic.Int32
		counter := 0
		var wg sync.WaitGroup
		for range clients {
			l := e.newClient(t).Lock("counter")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range iterations {
					if err := l.Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					h := holders.Add(1)
					for {
						m := maxHolders.Load()
						if h <= m || maxHolders.CompareAndSwap(m, h) {
							break
						}
					}
					v := counter // read, pause, write: overlapping holders would lose updates
					time.Sleep(50 * time.Microsecond)
					counter = v + 1
					holders.Add(-1)
					if err := l.Unlock(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		await.Group(t, &wg, 2*time.Minute, "the contenders")
		assert.Equal(t, clients*iterations, counter)
		assert.Equal(t, int32(1), maxHolders.Load(), "never two holders")
	})
}

func TestCancelledLockLeavesNothingBehind(t *testing.T) {
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		holder, waiter := k.of(c, "cancelled"), k.of(c, "cancelled")
		require.NoError(t, holder.LockLease(ctx, time.Hour))

		// The first round opens every connection the engine needs; the second
		// counts goroutines, on real Redis only (miniredis serves each
		// connection on goroutines of its own, in this process).
		for round := range 2 {
			before := countGoroutines()
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- waiter.Lock(wctx) }()
			eventually(t, 2*time.Second, func() bool {
				return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 1
			}, "the waiter waits on the channel")
			cancel()
			err := await.Value(t, done, time.Second, "a cancelled Lock returning promptly")
			require.ErrorIs(t, err, client.ErrNotObtained)
			require.ErrorIs(t, err, context.Canceled)
			eventually(t, 2*time.Second, func() bool {
				return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 0
			}, "no subscription left")
			eventually(t, 2*time.Second, func() bool {
				return e.rdb.Exists(ctx, redisio.FairQueueKey("cancelled"), redisio.FairTimeoutKey("cancelled")).Val() == 0
			}, "no place in a fair queue left") // given up after the cancel was answered
			if round == 1 && e.mini == nil {
				settleGoroutines(t, before)
			}
		}
		require.NoError(t, holder.Unlock(ctx))
		locked, _ := holder.IsLocked(ctx)
		assert.False(t, locked, "the cancelled waiter never took the lock")

		// A deadline that ends the wait reports the deadline.
		require.NoError(t, holder.Lock(ctx))
		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer dcancel()
		err := waiter.Lock(dctx)
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		ok, err := waiter.TryLockWait(dctx, time.Second, 0)
		assert.False(t, ok)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, holder.Unlock(ctx))
	})
}

func TestCancelRacingTheAcquireReleasesIt(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "racy")
		for i := range 100 {
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- l.Lock(rctx) }()
			if i%2 == 0 {
				time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
			}
			cancel()
			if err := await.Value(t, done, 5*time.Second, "Lock's return"); err == nil {
				require.NoError(t, l.Unlock(ctx))
			} else {
				require.ErrorIs(t, err, client.ErrNotObtained)
			}
		}
		eventually(t, 2*time.Second, func() bool {
			n, _ := e.rdb.Exists(ctx, "racy", redisio.FairQueueKey("racy"), redisio.FairTimeoutKey("racy")).Result()
			return n == 0
		}, "every acquire that raced a cancel was released, and no fair queue place left")
	})
}

func TestDoRunsUnderTheLockAndReportsLoss(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "do")
		errFn := errors.New("fn failed")
		err := l.Do(ctx, func(ctx context.Context) error {
			held, err := l.IsHeld(ctx)
			require.NoError(t, err)
			assert.True(t, held)
			return errFn
		})
		require.ErrorIs(t, err, errFn)
		locked, _ := l.IsLocked(ctx)
		assert.False(t, locked, "released after fn")

		started := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			result <- l.Do(ctx, func(ctx context.Context) error {
				close(started)
				<-ctx.Done()
				assert.ErrorIs(t, context.Cause(ctx), client.ErrLockLost)
				return ctx.Err()
			})
		}()
		await.Value(t, started, 5*time.Second, "fn to start")
		_, err = e.rdb.Del(ctx, "do").Result()
		require.NoError(t, err)
		e.advance(watchdog / 2)
		err = await.Value(t, result, 3*time.Second, "Do, its context cancelled when the lock was lost")
		require.ErrorIs(t, err, client.ErrLockLost)
	})
}

func TestLocker(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		c := e.newClient(t)
		mu := c.Lock("locker").Locker()
		mu.Lock()
		locked, _ := c.Lock("locker").IsLocked(context.Background())
		assert.True(t, locked)
		mu.Unlock()
		assert.Panics(t, mu.Unlock, "unlock of an unheld lock panics")
	})
}

func TestClosedClientReturnsErrClosed(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := k.of(c, "closing")
		require.NoError(t, l.Lock(ctx))
		e.close(t, c)
		require.ErrorIs(t, c.Close(ctx), client.ErrClosed)
		require.ErrorIs(t, l.Lock(ctx), client.ErrClosed)
		_, err := l.TryLock(ctx)
		require.ErrorIs(t, err, client.ErrClosed)
		require.ErrorIs(t, l.Unlock(ctx), client.ErrClosed)
		_, err = l.IsLocked(ctx)
		require.ErrorIs(t, err, client.ErrClosed)
		_, err = l.ForceUnlock(ctx)
		require.ErrorIs(t, err, client.ErrClosed)
		locked, _ := e.rdb.Exists(ctx, "closing").Result()
		assert.Equal(t, int64(1), locked, "Close releases nothing")
	})
}

func TestWaitersGetErrClosedOnClose(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		holderC, waiterC := e.newClient(t), e.newClient(t)
		require.NoError(t, k.of(holderC, "closed-wait").LockLease(ctx, time.Hour))
		done := make(chan error, 1)
		go func() { done <- k.of(waiterC, "closed-wait").Lock(ctx) }()
		eventually(t, 2*time.Second, func() bool {
			return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 1
		}, "waiting")
		e.close(t, waiterC)
		require.ErrorIs(t, await.Value(t, done, 2*time.Second, "the waiter, released by Close"), client.ErrClosed)
	})
}

func TestClosedClientsLockExpiresWithinTheWatchdog(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		c := e.newClient(t)
		require.NoError(t, k.of(c, "abandoned").Lock(ctx))
		e.close(t, c)
		probe := k.of(e.newClient(t), "abandoned")
		locked, _ := probe.IsLocked(ctx)
		require.True(t, locked)
		e.advance(watchdog + 100*time.Millisecond)
		locked, err := probe.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "gone within the watchdog timeout")
	})
}

// The goroutine count the leak checks read leaves out the engine's idle
// pool workers, and only them: a new client's pool has workers waiting.
func TestCountGoroutinesLeavesOutIdlePoolWorkers(t *testing.T) {
	before := countGoroutines()
	c := realEnv(t).newClient(t)
	require.NoError(t, c.Lock("count-goroutines").Lock(context.Background()))
	idleWorkers := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		idle := 0
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if idlePoolWorker(g) {
				idle++
			}
		}
		return idle
	}
	require.Eventually(t, func() bool { return idleWorkers() >= 4 }, 2*time.Second, 5*time.Millisecond,
		"the new client's idle workers are recognised")
	assert.Greater(t, countGoroutines(), before, "the client's other goroutines still count")
	assert.Less(t, countGoroutines(), runtime.NumGoroutine(), "idle workers are left out")
}
