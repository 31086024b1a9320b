package client_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/redisio"
)

// callLog records the script calls the clients of an env sent, once each
// was answered: a test waits on it for an attempt it cannot see otherwise
// (a refusal changes nothing in Redis), instead of sleeping.
type callLog struct {
	mu    sync.Mutex
	calls []redistest.ScriptCall
	// fail, when it returns true for a call, answers that call with an
	// error without running it.
	fail atomic.Pointer[func(redistest.ScriptCall) bool]
}

// logCalls routes the script calls of every client e makes from now on
// through a hook that records them.
func logCalls(e *env) *callLog {
	l := &callLog{}
	e.hooked = redistest.NewHooked(e.rdb)
	e.hooked.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if f := l.fail.Load(); f != nil && (*f)(c) {
			return redistest.Failed(errors.New("injected failure"))
		}
		r := c.Run()
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
		return r
	})
	return l
}

// count is how many answered calls had second key key (an owner's acquire
// latch, or a counting request's op latch).
func (l *callLog) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if len(c.Keys) > 1 && c.Keys[1] == key {
			n++
		}
	}
	return n
}

// semAcquires returns, in the order they were first seen, the op latches of
// the semaphore acquires on name (one per Acquire call: every attempt of a
// call has its request ID) and how many attempts each made.
func (l *callLog) semAcquires(name string) (latches []string, attempts map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	attempts = map[string]int{}
	for _, c := range l.calls {
		if len(c.Keys) == 2 && len(c.Args) == 2 && c.Keys[0] == name {
			if attempts[c.Keys[1]] == 0 {
				latches = append(latches, c.Keys[1])
			}
			attempts[c.Keys[1]]++
		}
	}
	return latches, attempts
}

// awaitRefusedTwice waits until each latch had two attempts answered: the
// first, refused, and the one its confirmed subscription woke, refused too.
// Its waiter then sleeps until a message or its look-again.
func awaitRefusedTwice(t *testing.T, calls *callLog, what string, latches ...string) {
	t.Helper()
	eventually(t, 5*time.Second, func() bool {
		return !slices.ContainsFunc(latches, func(k string) bool { return calls.count(k) < 2 })
	}, what)
}

// Survivor of a mutation audit: the subscriber passed an unlock message
// only to the first key actor listening on its channel. The read and the
// write side of one name are two key actors of a client on one channel,
// redisson_rwlock:{name}. A reader and a writer of one client wait while a
// holder elsewhere has a minute's lease (their look-again, on its PTTL, is
// out of reach; on the fake clock it never comes). The write unlock's one
// message wakes both sides: each tries again, one gets in, and the other
// gets in after that one's unlock, woken by its message too.
func TestReadAndWriteWaitersOfOneClientAreBothWoken(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "rw-fan-out"
		calls := logCalls(e)
		holder := e.newClient(t).ReadWriteLock(name).WriteLock()
		require.NoError(t, holder.LockLease(ctx, time.Minute))
		c := e.newClient(t)
		locks := []*client.Lock{c.ReadWriteLock(name).ReadLock(), c.ReadWriteLock(name).WriteLock()}
		latches := []string{redisio.AcquireLatchKey(name, locks[0].Owner()),
			redisio.AcquireLatchKey(name, redisio.WriteField(locks[1].Owner()))}
		waiting := newBackground(t, 2)
		for i, l := range locks {
			waiting.run(i, l.Lock)
		}
		awaitRefusedTwice(t, calls, "the reader and the writer refused after subscribing", latches...)
		awaitCountSubscribers(t, e, redisio.RWChannel(name), 1)
		before := []int{calls.count(latches[0]), calls.count(latches[1])}

		require.NoError(t, holder.Unlock(ctx))
		first := wokenByMessage(t, waiting.C, "the first side after the write unlock")
		require.NoError(t, first.err)
		eventually(t, messageWakeBound, func() bool {
			return calls.count(latches[0]) > before[0] && calls.count(latches[1]) > before[1]
		}, "both sides tried again after the one message")
		assert.Equal(t, 1, get(t, locks[first.i].HoldCount))

		require.NoError(t, locks[first.i].Unlock(ctx))
		second := wokenByMessage(t, waiting.C, "the other side after the first one's unlock")
		require.NoError(t, second.err)
		assert.Equal(t, 1-first.i, second.i)
		assert.Equal(t, 1, get(t, locks[second.i].HoldCount))
		require.NoError(t, locks[second.i].Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}

// Survivor of a mutation audit: a semaphore message woke only one local
// waiter. Three waiters of one client, queued in this order, need 1, 5 and
// 1 permits; Release(2)'s message wakes the first and the third (the one
// in the middle needs more than two): both get in, woken by that message,
// their look-agains out of reach (messageWaiterClient). The first one's
// success does not wake the third: it wakes the head, then the one asking
// for 5, which is refused again.
func TestSemaphoreMessageWakesEveryWaiterItCanServe(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-wake-1-5-1"
		calls := logCalls(e)
		c := messageWaiterClient(t, e)
		needs := []int64{1, 5, 1}
		waiting := newBackground(t, len(needs))
		for i, n := range needs {
			waiting.run(i, func(ctx context.Context) error { return c.Semaphore(name).Acquire(ctx, n) })
			// Each queues behind the one before: it is started once that
			// one has tried.
			eventually(t, 5*time.Second, func() bool {
				latches, _ := calls.semAcquires(name)
				return len(latches) == i+1
			}, "the waiter tried")
		}
		latches, _ := calls.semAcquires(name)
		awaitRefusedTwice(t, calls, "the head refused after subscribing", latches[0])
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		_, attempts := calls.semAcquires(name)
		require.Equal(t, 1, attempts[latches[1]], "the second waiter was refused once, and sleeps")
		require.Equal(t, 1, attempts[latches[2]], "the third waiter was refused once, and sleeps")

		require.NoError(t, e.newClient(t).Semaphore(name).Release(ctx, 2))
		var in []int
		for range 2 {
			r := wokenByMessage(t, waiting.C, "a waiter one permit serves, after Release(2)")
			require.NoError(t, r.err)
			in = append(in, r.i)
		}
		assert.ElementsMatch(t, []int{0, 2}, in, "the waiters needing 1 got in")
		staysBlocked(t, e, waiting.C, 200*time.Millisecond, "the waiter needing 5")
		assert.Zero(t, get(t, c.Semaphore(name).AvailablePermits))

		require.NoError(t, e.newClient(t).Semaphore(name).Release(ctx, 5))
		r := wokenByMessage(t, waiting.C, "the waiter needing 5, after Release(5)")
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.i)
		assert.Zero(t, get(t, c.Semaphore(name).AvailablePermits))
	})
}

// Survivor of a mutation audit: a write unlock woke only the head reader.
// The readers behind it would still get in one after another (each read
// acquire that succeeds wakes the next), so here the head reader's attempt
// after the unlock fails (a Redis error): the readers behind it get in only
// if the write unlock's message woke them too. Three readers of one client
// wait, queued in order, while a writer elsewhere holds for a minute.
func TestWriteUnlockWakesTheReadersBehindAFailingHead(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "rw-wake-behind-head"
		calls := logCalls(e)
		writer := e.newClient(t).ReadWriteLock(name).WriteLock()
		require.NoError(t, writer.LockLease(ctx, time.Minute))
		c := e.newClient(t)
		readers := make([]*client.Lock, 3)
		latches := make([]string, len(readers))
		waiting := newBackground(t, len(readers))
		for i := range readers {
			readers[i] = c.ReadWriteLock(name).ReadLock()
			latches[i] = redisio.AcquireLatchKey(name, readers[i].Owner())
			waiting.run(i, readers[i].Lock)
			eventually(t, 5*time.Second, func() bool { return calls.count(latches[i]) >= 1 }, "the reader tried")
		}
		awaitRefusedTwice(t, calls, "the head reader refused after subscribing", latches[0])
		awaitCountSubscribers(t, e, redisio.RWChannel(name), 1)

		var failed atomic.Bool
		failHead := func(sc redistest.ScriptCall) bool {
			return len(sc.Keys) > 1 && sc.Keys[1] == latches[0] && failed.CompareAndSwap(false, true)
		}
		calls.fail.Store(&failHead)
		require.NoError(t, writer.Unlock(ctx))
		results := map[int]error{}
		for range readers {
			r := wokenByMessage(t, waiting.C, "a reader after the write unlock")
			results[r.i] = r.err
		}
		require.True(t, failed.Load(), "the head reader's attempt failed")
		require.Error(t, results[0], "the head reader's attempt failed")
		require.NoError(t, results[1], "the second reader, woken by the message")
		require.NoError(t, results[2], "the third reader, woken by the message")
		assert.Equal(t, "read", e.rdb.HGet(ctx, name, "mode").Val())
		for _, r := range readers[1:] {
			assert.Equal(t, 1, get(t, r.HoldCount))
			require.NoError(t, r.Unlock(ctx))
		}
		eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 }, "nothing left held")
	})
}

// Survivor of a mutation audit: an unlock that leaves holds did not set
// the lock's TTL anew. Two holds with a 10 s lease; 5 s pass; one unlock:
// the TTL is back near 10 s, the lease counted from the unlock (as
// Redisson's unlock sets it). On the fast tier, where time is cheap, the
// lock is then still held past the first lease's end, its owner not told.
func TestUnlockLeavingAHoldSetsTheLeaseAnew(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		const name, lease = "unlock-refresh", 10 * time.Second
		l := k.of(e.newClient(t), name)
		other := k.of(e.newClient(t), name)
		require.NoError(t, l.LockLease(ctx, lease))
		require.NoError(t, l.LockLease(ctx, lease))
		require.Equal(t, 2, get(t, l.HoldCount))
		lost := l.Lost()
		e.advance(lease / 2)
		ttl := get(t, l.RemainTTL)
		require.LessOrEqual(t, ttl, lease/2+200*time.Millisecond, "half the lease passed")

		require.NoError(t, l.Unlock(ctx))
		assert.Equal(t, 1, get(t, l.HoldCount))
		ttl = get(t, l.RemainTTL)
		assert.Greater(t, ttl, lease-time.Second, "the unlock set the lease anew")
		assert.LessOrEqual(t, ttl, lease)
		if e.fake != nil {
			e.advance(lease/2 + time.Second)
			assert.True(t, get(t, l.IsHeld), "held past the first lease's end")
			assert.False(t, tryLock(t, other), "nobody else gets in past the first lease's end")
			requireOpen(t, lost, "the owner told of a loss")
		}
		require.NoError(t, l.Unlock(ctx))
		assert.False(t, get(t, l.IsLocked))
	})
}

// renewals is how many renewals of owner's holdings were answered.
func (l *callLog) renewals(owner string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.Renews() && slices.Contains(c.Args[1:], any(owner)) {
			n++
		}
	}
	return n
}

// Survivors of a mutation audit: a renewal that renewed the lock whoever
// held it (only a script test saw it), and an owner told of a loss its
// renewal found only when no renewal had succeeded for a watchdog (the
// real tier did not see it). A watchdog-mode lock is force-unlocked and
// another client takes it at once. The old holder's next renewal finds
// the lock someone else's: it is told then, well before the watchdog since
// its last renewal has passed, and the new holder keeps the lock. On real
// Redis the old holder's watchdog is 6 s, the force unlock comes right
// after one of its renewals, so the next one comes 2 s later and the
// fallback 6 s later: it must be told within 4 s. On the fake clock the
// clock moves half a watchdog only (one renewal), never to the fallback.
func TestRenewalFindsTheLockTakenByAnotherOwner(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, e *env, k lockKind) {
		ctx := testCtx(t)
		const name = "renew-taken"
		calls := logCalls(e)
		holderWatchdog := watchdog
		if e.fake == nil {
			holderWatchdog = 6 * time.Second
		}
		old := k.of(e.newClient(t, client.WithWatchdogTimeout(holderWatchdog)), name)
		next := k.of(e.newClient(t), name)
		require.NoError(t, old.Lock(ctx))
		lost := old.Lost()
		if e.fake == nil {
			n := calls.renewals(old.Owner())
			eventually(t, holderWatchdog, func() bool { return calls.renewals(old.Owner()) > n }, "a renewal of the old holder")
		}

		ok, err := next.ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, tryLock(t, next), "the other client takes the force-unlocked lock")
		taken := time.Now()
		if e.fake != nil {
			e.advance(watchdog / 2)
			await.Value(t, lost, 2*time.Second, "the old holder told, its fallback out of reach")
		} else {
			await.Value(t, lost, 2*holderWatchdog/3, "the old holder told by its renewal, before the fallback")
			t.Logf("old holder told %v after the other client took the lock (renewal every %v, fallback at %v)",
				time.Since(taken).Round(time.Millisecond), holderWatchdog/3, holderWatchdog)
		}
		e.advance(2 * watchdog)
		assert.True(t, get(t, next.IsHeld), "the new holder keeps the lock")
		assert.Zero(t, get(t, old.HoldCount))
		require.ErrorIs(t, old.Unlock(ctx), client.ErrNotHeld, "the old holder's late unlock, the lock held by another")
		assert.Equal(t, 1, get(t, next.HoldCount), "the new holder's hold is untouched")
		requireOpen(t, next.Lost(), "the new holder told of a loss")
		require.NoError(t, next.Unlock(ctx))
		assert.False(t, get(t, next.IsLocked))
	})
}
