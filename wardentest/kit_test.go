package wardentest_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/wardentest"
)

// result is what a waiter's TryLockWait returned.
type result struct {
	ok  bool
	err error
}

// startWaiter calls l.TryLockWait(wait) on a goroutine and returns once
// the engine is waiting for the lock (the only waiter of its name); the
// outcome comes on the channel.
func startWaiter(t *testing.T, kit *wardentest.Kit, l *client.Lock, wait time.Duration) <-chan result {
	t.Helper()
	out := make(chan result, 1)
	go func() {
		ok, err := l.TryLockWait(context.Background(), wait, 0)
		out <- result{ok, err}
	}()
	kit.WaitWaiters(l.Name(), 1)
	return out
}

// awaitSubscribers waits until channel has n subscribers.
func awaitSubscribers(t *testing.T, kit *wardentest.Kit, channel string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		subs, err := kit.Redis().PubSubNumSub(context.Background(), channel).Result()
		require.NoError(t, err)
		if subs[channel] >= n {
			kit.Advance(0)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d subscribers on %s within 5s", n, channel)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAdvanceTimesOutAWaitersWait(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	holder := kit.NewClient().Lock("q")
	require.NoError(t, holder.Lock(ctx))

	out := startWaiter(t, kit, kit.Client().Lock("q"), 20*time.Second)
	kit.Advance(19 * time.Second)
	select {
	case r := <-out:
		t.Fatalf("the wait ended after 19s of its 20s: %+v", r)
	default:
	}
	kit.Advance(time.Second)
	select {
	case r := <-out:
		require.NoError(t, r.err)
		assert.False(t, r.ok, "the wait timed out")
	default:
		t.Fatal("Advance returned before the wait that fell due ended")
	}
}

func TestUnlockWakesAWaiterOfAnotherClient(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	holder := kit.NewClient().Lock("q")
	require.NoError(t, holder.Lock(ctx))

	waiter := kit.Client().Lock("q")
	out := startWaiter(t, kit, waiter, time.Minute)
	kit.Advance(5 * time.Second)
	require.NoError(t, holder.Unlock(ctx))
	kit.Advance(0) // the unlock's message reaches the waiter's engine
	select {
	case r := <-out:
		require.NoError(t, r.err)
		require.True(t, r.ok, "the waiter took the lock")
	default:
		t.Fatal("Advance(0) returned before the woken waiter took the lock")
	}
	require.NoError(t, waiter.Unlock(ctx))
}

func TestWatchdogRenewsAcrossManyAdvances(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t, client.WithWatchdogTimeout(3*time.Second))
	ctx := context.Background()
	l := kit.Client().Lock("long")
	require.NoError(t, l.Lock(ctx))
	for range 50 {
		kit.Advance(1400 * time.Millisecond) // 70s in all: 70 renewals
		ttl, err := kit.Redis().PTTL(ctx, "long").Result()
		require.NoError(t, err)
		require.Greater(t, ttl, time.Second, "at %v", kit.Now())
	}
	select {
	case <-l.Lost():
		t.Fatal("the renewed lock was lost")
	default:
	}
	require.NoError(t, l.Unlock(ctx))
}

func TestLoseNextReplyOfAnAcquireIsAppliedOnce(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()

	// TryLock: the engine cannot tell whether the lost acquire took
	// effect, so it gives back whatever it may have taken and fails.
	l := kit.Client().Lock("once")
	struck := kit.LoseNextReply("EVALSHA")
	ok, err := l.TryLock(ctx)
	await.Value(t, struck, time.Second, "the loss")
	require.ErrorIs(t, err, wardentest.ErrReplyLost)
	assert.False(t, ok)
	kit.Advance(0) // the engine's undo runs after it answered
	exists, err := kit.Redis().Exists(ctx, "once").Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "no hold left behind")

	// A reentry whose reply is lost: the engine undoes exactly the hold
	// it may have added, so the lock is held once, not twice or never.
	require.NoError(t, l.Lock(ctx))
	struck = kit.LoseNextReply("evalsha")
	require.ErrorIs(t, l.Lock(ctx), wardentest.ErrReplyLost)
	await.Value(t, struck, time.Second, "the loss")
	kit.Advance(0) // the engine's undo runs after it answered
	count, err := l.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, count)
	require.NoError(t, l.Unlock(ctx))
	exists, err = kit.Redis().Exists(ctx, "once").Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "one Unlock released it")
}

func TestPauseEnginePastTheLeaseLosesTheLock(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	l := kit.Client().Lock("paused")
	require.NoError(t, l.Lock(ctx))
	other := kit.NewClient().Lock("paused")

	kit.PauseEngine(20 * time.Second) // shorter than the 30s lease: renewed late, kept
	select {
	case <-l.Lost():
		t.Fatal("a 20s pause lost a 30s lease")
	default:
	}
	kit.PauseEngine(40 * time.Second) // longer than the lease: lost
	select {
	case <-l.Lost():
	default:
		t.Fatal("PauseEngine returned before the holder was told")
	}
	ok, err := other.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestDropPubSubReconnectsAndWakesWaiters(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	holder := kit.NewClient().Lock("q")
	require.NoError(t, holder.Lock(ctx))
	out := startWaiter(t, kit, kit.Client().Lock("q"), time.Minute)

	require.Positive(t, kit.DropPubSub())
	kit.Advance(time.Second) // the engine's reconnect pause
	awaitSubscribers(t, kit, "redisson_lock__channel:{q}", 1)
	require.NoError(t, holder.Unlock(ctx))
	kit.Advance(0)
	r := await.Value(t, out, time.Second, "the waiter")
	require.NoError(t, r.err)
	require.True(t, r.ok)
}

func TestFixedLeaseExpiresInRedisOnAdvance(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	require.NoError(t, kit.Client().Lock("l").LockLease(ctx, 10*time.Second))
	kit.Advance(9 * time.Second)
	ttl, err := kit.Redis().PTTL(ctx, "l").Result()
	require.NoError(t, err)
	assert.Equal(t, time.Second, ttl)
	kit.Advance(time.Second)
	exists, err := kit.Redis().Exists(ctx, "l").Result()
	require.NoError(t, err)
	assert.Zero(t, exists)
}

// recorder is a testing.TB that records the kit's failures and cleanups
// instead of acting on them.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()           {}
func (r *recorder) Cleanup(f func())  { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// fatal runs fn on a goroutine of its own (Fatalf ends it) and returns
// what it reported.
func (r *recorder) fatal(t *testing.T, fn func()) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	await.Value(t, done, 5*time.Second, "the call")
	errs := r.errs
	r.errs = nil
	return errs
}

func (r *recorder) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestCleanupFailsTheTestOnALeakedGoroutine(t *testing.T) {
	rec := &recorder{TB: t}
	kit := wardentest.New(rec)
	require.NoError(t, kit.Client().Lock("l").Lock(context.Background()))
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }() // the code under test forgot a goroutine
	rec.cleanup()
	require.Len(t, rec.errs, 1)
	assert.Contains(t, rec.errs[0], "wardentest: leaked goroutines")
}

func TestCleanupOfAKitWithNothingLeakedPasses(t *testing.T) {
	rec := &recorder{TB: t}
	kit := wardentest.New(rec)
	l := kit.Client().Lock("l")
	require.NoError(t, l.Lock(context.Background()))
	kit.Advance(time.Minute)
	rec.cleanup()
	assert.Empty(t, rec.errs)
}

func TestAdvanceEndsAFairWaitersWaitAndItsPlace(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	holder := kit.NewClient().FairLock("f")
	require.NoError(t, holder.Lock(ctx))

	out := make(chan result, 1)
	go func() {
		ok, err := kit.Client().FairLock("f").TryLockWait(ctx, 20*time.Second, 0)
		out <- result{ok, err}
	}()
	queue := "redisson_lock_queue:{f}"
	kit.WaitWaiters("f", 1)
	n, err := kit.Redis().LLen(ctx, queue).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the waiter has its place")
	kit.Advance(20 * time.Second)
	select {
	case r := <-out:
		require.NoError(t, r.err)
		assert.False(t, r.ok)
	default:
		t.Fatal("Advance returned before the fair wait ended")
	}
	n, err = kit.Redis().LLen(ctx, queue).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the waiter's place is gone")
	require.NoError(t, holder.Unlock(ctx))
}

func TestBadInputFailsTheTestNamingTheArgument(t *testing.T) {
	rec := &recorder{TB: t}
	kit := wardentest.New(rec)
	defer rec.cleanup()
	for _, tc := range []struct {
		call func()
		want string
	}{
		{func() { kit.Advance(-time.Second) }, "wardentest: Advance(-1s): want d >= 0"},
		{func() { kit.PauseEngine(-time.Second) }, "wardentest: PauseEngine(-1s): want d >= 0"},
		{func() { kit.LoseNextReply(" ") }, "wardentest: LoseNextReply: command is empty"},
	} {
		assert.Equal(t, []string{tc.want}, rec.fatal(t, tc.call))
	}
	start := kit.Now()
	kit.Advance(time.Second) // the kit still works
	assert.Equal(t, time.Second, kit.Now().Sub(start))
}

// WaitWaiters returns once the calls started on other goroutines wait in
// their engines, of every client (and a semaphore's too): the time moved
// right after it counts in every one's wait. Waiters reads the
// count; WaitWaiters(name, 0) waits until they have all gone.
func TestWaitWaitersKnowsTheCallsReachedTheEngine(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t)
	ctx := context.Background()
	holder := kit.NewClient().Lock("w")
	require.NoError(t, holder.Lock(ctx))
	assert.Zero(t, kit.Waiters("w"))

	out := make(chan result, 4)
	for _, c := range []*client.Client{kit.Client(), kit.NewClient(), kit.NewClient()} {
		go func() {
			ok, err := c.Lock("w").TryLockWait(ctx, 20*time.Second, 0)
			out <- result{ok, err}
		}()
	}
	go func() {
		ok, err := kit.Client().Semaphore("permits").TryAcquire(ctx, 1, 20*time.Second) // none yet: it waits
		out <- result{ok, err}
	}()
	kit.WaitWaiters("w", 3)
	kit.WaitWaiters("permits", 1)
	assert.Equal(t, 3, kit.Waiters("w"))
	assert.Zero(t, kit.Waiters("other"))

	kit.Advance(20 * time.Second) // every wait counted from its call: all end now
	for range 4 {
		r := await.Value(t, out, time.Second, "a wait that fell due")
		require.NoError(t, r.err)
		assert.False(t, r.ok)
	}
	kit.WaitWaiters("w", 0)
	assert.Zero(t, kit.Waiters("permits"))
	require.NoError(t, holder.Unlock(ctx))
}
