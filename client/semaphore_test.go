package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// awaitCountSubscribers waits until n clients listen on channel: a count
// waiter subscribes after its first refused attempt, so this tells the test
// that the waiter is blocked and wakes only by a message or its look-again.
func awaitCountSubscribers(t *testing.T, e *env, channel string, n int64) {
	t.Helper()
	eventually(t, 5*time.Second, func() bool {
		return e.rdb.PubSubNumSub(context.Background(), channel).Val()[channel] >= n
	}, "the waiters listen on "+channel)
}

// staysBlocked lets d pass on e's clock (past the engine's look-again on
// the fake clock), waits 50 ms more of real time for an attempt the last
// step started to come back, and fails the test if anything arrived on ch.
func staysBlocked[T any](t *testing.T, e *env, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	e.advance(d)
	time.Sleep(50 * time.Millisecond)
	select {
	case v := <-ch:
		t.Fatalf("%s: got %v, want still blocked", what, v)
	default:
	}
}

// messageWakeBound is how long, in real time, a blocked waiter of a
// messageWaiterClient may take to be woken by a message. On real Redis its
// own look-again is 10 s away; on the fake clock it never comes while the
// test does not advance the clock.
const messageWakeBound = 2 * time.Second

// messageWaiterClient starts a client whose blocked waiters only a message
// wakes within messageWakeBound. On real Redis its watchdog is 30 s, so a
// refused waiter looks again (watchdog/3) only 10 s later. On the fake
// clock it keeps the 1 s watchdog: its look-again fires only when the test
// advances the clock, so a test can still let one pass (staysBlocked) and
// see it refused before the message that must wake the waiter.
func messageWaiterClient(t *testing.T, e *env) *client.Client {
	t.Helper()
	if e.fake != nil {
		return e.newClient(t)
	}
	return e.newClient(t, client.WithWatchdogTimeout(30*time.Second))
}

// wokenByMessage returns what a waiter of a messageWaiterClient sends on
// ch, waiting for it up to messageWakeBound of real time without moving
// e's clock: a waiter that needs its look-again fails the test.
func wokenByMessage[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return await.Value(t, ch, messageWakeBound, what+", woken by a message before its look-again")
}

// withoutMessage makes write (a change that publishes nothing) once the
// waiter on done has settled into its refusal, and on the fake clock checks
// that the waiter does not proceed until time passes: only the engine's
// look-again can find the change.
func withoutMessage[T any](t *testing.T, e *env, done <-chan T, write func() error) {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // the wake-up on subscribing has run
	require.NoError(t, write())
	if e.fake != nil {
		time.Sleep(100 * time.Millisecond)
		select {
		case v := <-done:
			t.Fatalf("the waiter proceeded (%v) before its look-again was due", v)
		default:
		}
	}
}

func TestSemaphoreReleaseAcquireBasics(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-basics")
		assert.Zero(t, get(t, s.AvailablePermits), "a missing semaphore has no permits")
		ok, err := s.TrySetPermits(ctx, 10)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.TrySetPermits(ctx, 5)
		require.NoError(t, err)
		assert.False(t, ok, "TrySetPermits only once")
		assert.Equal(t, int64(10), get(t, s.AvailablePermits))

		require.NoError(t, s.Acquire(ctx, 1))
		assert.Equal(t, int64(9), get(t, s.AvailablePermits))
		require.NoError(t, s.Release(ctx, 1))
		assert.Equal(t, int64(10), get(t, s.AvailablePermits))
		require.NoError(t, s.Acquire(ctx, 5))
		assert.Equal(t, int64(5), get(t, s.AvailablePermits))
		assert.Equal(t, "5", e.rdb.Get(ctx, "sem-basics").Val(), "the count is the key's value")

		ok, err = s.TryAcquire(ctx, 5, 0)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = s.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		assert.False(t, ok, "none left")
		assert.Equal(t, "0", e.rdb.Get(ctx, "sem-basics").Val())
	})
}

func TestSemaphoreReleaseWithoutAcquireAndZeroPermits(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		s := c.Semaphore("sem-no-init")

		// Zero permits: nothing to take, nothing to give, nothing written.
		require.NoError(t, s.Release(ctx, 0))
		require.NoError(t, s.Acquire(ctx, 0), "Acquire(0) on an empty semaphore")
		ok, err := s.TryAcquire(ctx, 0, 0)
		require.NoError(t, err)
		assert.True(t, ok, "TryAcquire(0) on an empty semaphore")
		ok, err = s.TryAcquire(ctx, 0, time.Second)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Empty(t, dataKeys(t, e.rdb), "zero permits write nothing")

		// Release needs no prior acquire, nor an initialised semaphore.
		require.NoError(t, s.Release(ctx, 1))
		assert.Equal(t, int64(1), get(t, s.AvailablePermits))
		require.NoError(t, s.Release(ctx, 1))
		assert.Equal(t, int64(2), get(t, s.AvailablePermits))
		require.NoError(t, s.Acquire(ctx, 2))
		assert.Equal(t, "0", e.rdb.Get(ctx, "sem-no-init").Val())
		require.NoError(t, s.Release(ctx, 0))
		assert.Equal(t, "0", e.rdb.Get(ctx, "sem-no-init").Val(), "Release(0) is a no-op")

		ok, err = c.Semaphore("sem-no-init").TrySetPermits(ctx, 7)
		require.NoError(t, err)
		assert.False(t, ok, "a released-into semaphore exists")
	})
}

func TestSemaphoreNegativePermitsAreRejected(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-negative")
		calls := []struct {
			what string
			call func() error
		}{
			{"Release", func() error { return s.Release(ctx, -1) }},
			{"Acquire", func() error { return s.Acquire(ctx, -1) }},
			{"TryAcquire", func() error { _, err := s.TryAcquire(ctx, -3, time.Second); return err }},
			{"TryAcquire, negative wait", func() error { _, err := s.TryAcquire(ctx, 1, -time.Second); return err }},
			{"TrySetPermits", func() error { _, err := s.TrySetPermits(ctx, -10); return err }},
			{"Release beyond 2^53", func() error { return s.Release(ctx, 1<<53+1) }},
			{"AddPermits beyond -2^53", func() error { return s.AddPermits(ctx, -(1<<53 + 1)) }},
		}
		for _, c := range calls {
			require.ErrorIs(t, c.call(), client.ErrInvalidArgument, c.what)
		}
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
	})
}

// An Acquire(4) with 2 permits available completes only after two single
// releases (Redisson's testBlockingNAcquire): it is still blocked after the
// first, through a look-again on the fake clock, and the second release's
// message wakes it (its own look-again is out of reach).
func TestSemaphoreBlockingAcquireWakesOnRelease(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := messageWaiterClient(t, e)
		s := c.Semaphore("sem-wake-release")
		ok, err := s.TrySetPermits(ctx, 2)
		require.NoError(t, err)
		require.True(t, ok)

		done := inBackground(t, func(ctx context.Context) error { return s.Acquire(ctx, 4) })
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel("sem-wake-release"), 1)
		require.NoError(t, e.newClient(t).Semaphore("sem-wake-release").Release(ctx, 1))
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire(4) with 3 available")
		assert.Equal(t, int64(3), get(t, s.AvailablePermits))
		require.NoError(t, s.Release(ctx, 1))
		r := wokenByMessage(t, done, "Acquire(4) after the second release")
		require.NoError(t, r.err)
		assert.Equal(t, int64(0), get(t, s.AvailablePermits))
	})
}

// An Acquire(2) with 1 permit available waits through its look-agains and
// is woken by AddPermits(1)'s message (Redisson's
// testAcquireAfterAddPermits).
func TestSemaphoreBlockingAcquireWakesOnAddPermits(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := messageWaiterClient(t, e).Semaphore("sem-wake-add")
		ok, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, ok)

		done := inBackground(t, func(ctx context.Context) error { return s.Acquire(ctx, 2) })
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel("sem-wake-add"), 1)
		staysBlocked(t, e, done, 700*time.Millisecond, "Acquire(2) with 1 available, after two look-agains on the fake clock")
		assert.Equal(t, int64(1), get(t, s.AvailablePermits), "a refused acquire takes nothing")
		require.NoError(t, s.AddPermits(ctx, 1))
		r := wokenByMessage(t, done, "Acquire(2) after AddPermits(1)")
		require.NoError(t, r.err)
		assert.Equal(t, int64(0), get(t, s.AvailablePermits))
	})
}

func TestSemaphoreAddPermitsMayGoNegative(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-reduce")
		ok, err := s.TrySetPermits(ctx, 10)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.Acquire(ctx, 10))
		require.NoError(t, s.AddPermits(ctx, -5))
		assert.Equal(t, int64(-5), get(t, s.AvailablePermits))
		assert.Equal(t, "-5", e.rdb.Get(ctx, "sem-reduce").Val())
		ok, err = s.TryAcquire(ctx, 1, 0)
		require.NoError(t, err)
		assert.False(t, ok, "nothing to take below zero")
		require.NoError(t, s.AddPermits(ctx, 0), "AddPermits(0) is a no-op")
		require.NoError(t, s.Release(ctx, 10))
		assert.Equal(t, int64(5), get(t, s.AvailablePermits))
		require.NoError(t, s.AddPermits(ctx, 3))
		assert.Equal(t, int64(8), get(t, s.AvailablePermits))
	})
}

func TestSemaphoreDrainPermitsReturnsTheRemainder(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		n, err := c.Semaphore("sem-drain-missing").DrainPermits(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, e.rdb.Exists(ctx, "sem-drain-missing").Val(), "draining a missing semaphore writes nothing")

		s := c.Semaphore("sem-drain")
		ok, err := s.TrySetPermits(ctx, 10)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.Acquire(ctx, 3))
		n, err = s.DrainPermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(7), n)
		assert.Equal(t, "0", e.rdb.Get(ctx, "sem-drain").Val())
		n, err = s.DrainPermits(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "nothing left the second time")

		// A negative count is returned as it was, and becomes 0 (Redisson).
		require.NoError(t, s.AddPermits(ctx, -3))
		n, err = s.DrainPermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(-3), n)
		assert.Zero(t, get(t, s.AvailablePermits))
	})
}

func TestSemaphoreTryAcquireGivesUpAfterItsWait(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-try-wait")
		require.NoError(t, s.Release(ctx, 1))

		ok, err := s.TryAcquire(ctx, 2, 0)
		require.NoError(t, err)
		assert.False(t, ok, "no wait: one attempt")

		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() {
			ok, err := s.TryAcquire(ctx, 2, 500*time.Millisecond)
			done <- result{ok, err}
		}()
		r, took := awaitWhileTime(t, e, done, 3*time.Second, "TryAcquire(2, 500ms)")
		require.NoError(t, r.err, "a wait that runs out is not an error")
		assert.False(t, r.ok)
		assert.GreaterOrEqual(t, took, 490*time.Millisecond, "not before its wait ran out")
		assert.Less(t, took, 2*time.Second, "soon after its wait ran out")
		assert.Equal(t, int64(1), get(t, s.AvailablePermits), "nothing taken")

		// A timed acquire that is served in time (Redisson's testTryNAcquire).
		go func() {
			ok, err := s.TryAcquire(ctx, 2, 5*time.Second)
			done <- result{ok, err}
		}()
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel("sem-try-wait"), 1)
		e.advance(300 * time.Millisecond)
		require.NoError(t, s.Release(ctx, 1))
		r, _ = awaitWhileTime(t, e, done, 3*time.Second, "TryAcquire(2, 5s) after a release")
		require.NoError(t, r.err)
		assert.True(t, r.ok)
		assert.Zero(t, get(t, s.AvailablePermits))
	})
}

func TestSemaphoreCancelledAcquireTakesNothing(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-cancel")
		require.NoError(t, s.Release(ctx, 1))

		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Acquire(actx, 2) }()
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel("sem-cancel"), 1)
		cancel()
		err := await.Value(t, done, 2*time.Second, "a cancelled Acquire returning promptly")
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)

		// Already cancelled: the blocking call and the try call.
		err = s.Acquire(actx, 1)
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)
		ok, err := s.TryAcquire(actx, 1, time.Second)
		assert.False(t, ok)
		require.ErrorIs(t, err, context.Canceled)

		e.advance(100 * time.Millisecond)
		assert.Equal(t, int64(1), get(t, s.AvailablePermits), "no permit taken")
		assert.Equal(t, "1", e.rdb.Get(ctx, "sem-cancel").Val())
		eventually(t, 3*time.Second, func() bool {
			return e.rdb.PubSubNumSub(ctx, redisio.SemaphoreChannel("sem-cancel")).Val()[redisio.SemaphoreChannel("sem-cancel")] == 0
		}, "no subscription left")
	})
}

// Five waiters of one client, one permit each: Release(3)'s message lets
// three through and the fourth stays blocked; Release(2)'s lets the last
// two through. Their own look-agains are out of reach.
func TestSemaphoreReleaseWakesAsManyWaitersAsPermits(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-wake-n"
		calls := logCalls(e)
		c := messageWaiterClient(t, e)
		waiters := newBackground(t, 5)
		for i := range 5 {
			waiters.run(i, func(ctx context.Context) error { return c.Semaphore(name).Acquire(ctx, 1) })
		}
		done := waiters.C
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		eventually(t, 5*time.Second, func() bool { latches, _ := calls.semAcquires(name); return len(latches) == 5 },
			"all five queued and refused")

		require.NoError(t, c.Semaphore(name).Release(ctx, 3))
		for i := range 3 {
			require.NoError(t, wokenByMessage(t, done, "a waiter after Release(3)").err, "waiter %d", i)
		}
		staysBlocked(t, e, done, 700*time.Millisecond, "a fourth waiter after Release(3)")
		assert.Zero(t, get(t, c.Semaphore(name).AvailablePermits))

		require.NoError(t, e.newClient(t).Semaphore(name).Release(ctx, 2))
		for i := range 2 {
			require.NoError(t, wokenByMessage(t, done, "a waiter after Release(2)").err, "waiter %d", i)
		}
		assert.Zero(t, get(t, c.Semaphore(name).AvailablePermits))
	})
}

// Eight workers on two clients take and give back one permit each, 20
// times: never more holders at once than permits, every worker finishes,
// every permit is back. With 1 permit the semaphore is a mutex across
// clients (Redisson's testConcurrency_MultiInstance_1_permits).
func TestSemaphoreContention(t *testing.T) {
	for _, tc := range []struct {
		name    string
		permits int32
	}{{"one permit", 1}, {"three permits", 3}} {
		permits := tc.permits
		t.Run(tc.name, func(t *testing.T) {
			both(t, func(t *testing.T, e *env) {
				ctx := testCtx(t)
				clients := []*client.Client{e.newClient(t), e.newClient(t)}
				set(t, clients[0].Semaphore("sem-contention").TrySetPermits, int64(permits))
				sems := make([]*client.Semaphore, 8)
				for i := range sems {
					sems[i] = clients[i%2].Semaphore("sem-contention")
				}
				contend(t, len(sems), 20, permits,
					func(i int) error { return sems[i].Acquire(ctx, 1) },
					func(i int) error { return sems[i].Release(ctx, 1) })
				assert.Equal(t, int64(permits), get(t, sems[0].AvailablePermits), "every permit given back")
			})
		})
	}
}

func TestSemaphoreLostMessageDoesNotHangTheWaiter(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-lost-msg")
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel("sem-lost-msg"), 1)
		// A permit appears without a message (a lost one, or a write by
		// another tool): the waiter's look-again (watchdog/3) finds it.
		withoutMessage(t, e, done, func() error { return e.rdb.Set(ctx, "sem-lost-msg", 1, 0).Err() })
		err, took := awaitWhileTime(t, e, done, 5*time.Second, "the waiter, without a release message")
		require.NoError(t, err)
		assert.Less(t, took, watchdog/3+time.Second, "within the look-again bound")
		assert.Equal(t, "0", e.rdb.Get(ctx, "sem-lost-msg").Val())
	})
}

func TestSemaphoreHeadAskingForMoreDoesNotHoldBackSmallerWaiters(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		calls := logCalls(e)
		c := e.newClient(t)
		sem := c.Semaphore("sem-head")
		tried := func(n int) func() bool {
			return func() bool { latches, _ := calls.semAcquires("sem-head"); return len(latches) == n }
		}
		// Each waiter is started once the one before it tried: the one
		// asking for 5 is the head, the one asking for 1 queues behind it.
		big := inBackground(t, func(ctx context.Context) error { return sem.Acquire(ctx, 5) })
		eventually(t, 5*time.Second, tried(1), "the head tried")
		small := inBackground(t, func(ctx context.Context) error { return sem.Acquire(ctx, 1) })
		eventually(t, 5*time.Second, tried(2), "the waiter behind it tried")
		require.NoError(t, e.newClient(t).Semaphore("sem-head").Release(ctx, 1))
		r, _ := awaitWhileTime(t, e, small, 2*time.Second, "the waiter one permit serves")
		require.NoError(t, r.err)
		select {
		case r := <-big:
			t.Fatalf("the head asking for 5 got through with 1 released: %v", r.err)
		default:
		}
		require.NoError(t, sem.Release(ctx, 5))
		r, _ = awaitWhileTime(t, e, big, 2*time.Second, "the head")
		require.NoError(t, r.err)
	})
}

// ReleaseIfExistsAvailable answers the permits its own script left, and 0
// (with false) for a semaphore that is gone.
func TestSemaphoreReleaseIfExistsAvailable(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	sem := e.newClient(t).Semaphore("release-available")
	set(t, sem.TrySetPermits, 3)
	require.NoError(t, sem.Acquire(ctx, 2))
	n, ok, err := sem.ReleaseIfExistsAvailable(ctx, 2)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.EqualValues(t, 3, n)
	_, err = sem.Delete(ctx)
	require.NoError(t, err)
	n, ok, err = sem.ReleaseIfExistsAvailable(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, n)
	_, _, err = sem.ReleaseIfExistsAvailable(ctx, -1)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
}

// The total beside a semaphore follows TrySetPermits, SetPermits and
// AddPermits, shares the semaphore's TTL and goes with its Delete; a
// semaphore Redisson set (its key alone) has none.
func TestSemaphorePermitsTotal(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := e.newClient(t, client.WithoutRegistry())
	const name = "tot:sem"
	totalKey := redisio.PermitsTotalKey(name)
	total := func() (int64, bool) {
		t.Helper()
		o, err := client.Inspect(ctx, e.rdb, name)
		require.NoError(t, err)
		require.Equal(t, client.ObjectSemaphore, o.Kind)
		return o.Total, o.HasTotal
	}
	s := c.Semaphore(name)
	ok, err := s.TrySetPermits(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "5", e.rdb.Get(ctx, totalKey).Val())
	require.NoError(t, s.Acquire(ctx, 2))
	n, known := total()
	assert.True(t, known)
	assert.Equal(t, int64(5), n, "acquire leaves the total")

	// A second TrySetPermits changes nothing.
	ok, err = s.TrySetPermits(ctx, 9)
	require.NoError(t, err)
	assert.False(t, ok)
	n, _ = total()
	assert.Equal(t, int64(5), n)

	// AddPermits moves the total by its delta, either way.
	require.NoError(t, s.AddPermits(ctx, 3))
	n, _ = total()
	assert.Equal(t, int64(8), n)
	require.NoError(t, s.AddPermits(ctx, -4))
	n, _ = total()
	assert.Equal(t, int64(4), n)
	assert.Equal(t, "2", e.rdb.Get(ctx, name).Val(), "3 available, +3, -4")

	// SetPermits sets it, and keeps the semaphore's TTL on both.
	ok, err = s.Expire(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ttl := e.rdb.PTTL(ctx, totalKey).Val()
	assert.Greater(t, ttl, 50*time.Second, "Expire gives the total the semaphore's TTL")
	require.NoError(t, s.SetPermits(ctx, 7))
	n, _ = total()
	assert.Equal(t, int64(7), n)
	assert.Greater(t, e.rdb.PTTL(ctx, totalKey).Val(), 50*time.Second, "SetPermits keeps the TTL")
	assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 50*time.Second)
	ok, err = s.ClearExpire(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, time.Duration(-1), e.rdb.PTTL(ctx, totalKey).Val())

	// Delete takes the total with it.
	ok, err = s.Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Zero(t, e.rdb.Exists(ctx, name, totalKey).Val())

	// TrySetPermitsTTL: both keys expire together.
	ok, err = s.TrySetPermitsTTL(ctx, 3, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Greater(t, e.rdb.PTTL(ctx, totalKey).Val(), 50*time.Second)
	require.NoError(t, e.rdb.Del(ctx, name, totalKey).Err())

	// Redisson's semaphore: its key alone, no total; AddPermits starts none.
	require.NoError(t, e.rdb.Set(ctx, name, 0, 0).Err())
	_, known = total()
	assert.False(t, known, "a semaphore Redisson set has no total")
	// One a vanished semaphore left behind is dropped, not moved.
	require.NoError(t, e.rdb.Set(ctx, totalKey, 5, 0).Err())
	require.NoError(t, e.rdb.Del(ctx, name).Err())
	require.NoError(t, s.AddPermits(ctx, -1))
	assert.Zero(t, e.rdb.Exists(ctx, totalKey).Val(), "a stale total is deleted")
	_, known = total()
	assert.False(t, known)
}
