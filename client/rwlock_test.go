package client_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

func tryLock(t *testing.T, l *client.Lock) bool {
	t.Helper()
	ok, err := l.TryLock(context.Background())
	require.NoError(t, err)
	return ok
}

func TestReadersShareAndTheWriterWaitsForAll(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		r1, r2, w := c.ReadWriteLock("rw-share"), c.ReadWriteLock("rw-share"), c.ReadWriteLock("rw-share")
		require.True(t, tryLock(t, r1.ReadLock()))
		assert.False(t, tryLock(t, w.WriteLock()), "a reader excludes the writer")
		require.True(t, tryLock(t, r2.ReadLock()), "readers share")

		got := inBackground(t, w.WriteLock().Lock)
		// The writer was refused and listens (nobody else does): the first
		// read unlock comes after its refusal, and a look-again of its
		// (on the PTTL, at most the watchdog) finds the other reader.
		awaitCountSubscribers(t, e, redisio.RWChannel("rw-share"), 1)
		require.NoError(t, r1.ReadLock().Unlock(ctx))
		staysBlocked(t, e, got, watchdog+200*time.Millisecond, "the writer with a reader left")
		require.NoError(t, r2.ReadLock().Unlock(ctx))
		r, _ := awaitWhileTime(t, e, got, 2*time.Second, "the writer")
		require.NoError(t, r.err)
		locked, err := w.WriteLock().IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, locked)
		locked, err = w.ReadLock().IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "held for writing, not reading")
		ok, err := r1.ReadLock().ForceUnlock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "a read force unlock leaves a write-held lock alone")
		require.NoError(t, w.WriteLock().Unlock(ctx))
	})
}

// Twenty readers on two clients, blocked by a writer on a third, stay out
// while it writes (on the fake clock through a look-again, which finds the
// lock still write-held), and the write unlock's wake-all message lets
// every one of them in: their own look-agains are out of reach
// (messageWaiterClient; on real Redis the writer's 30 s watchdog is the
// PTTL they sleep on). They then hold the lock together.
func TestWriteUnlockWakesEveryBlockedReader(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name, n = "rw-wake-all", 20
		calls := logCalls(e)
		writer := messageWaiterClient(t, e).ReadWriteLock(name)
		require.NoError(t, writer.WriteLock().Lock(ctx))
		readers := []*client.Client{messageWaiterClient(t, e), messageWaiterClient(t, e)}
		locks := make([]*client.Lock, n)
		waiting := newBackground(t, n)
		for i := range locks {
			locks[i] = readers[i%2].ReadWriteLock(name).ReadLock()
			waiting.run(i, locks[i].Lock)
		}
		entered := waiting.C
		awaitCountSubscribers(t, e, redisio.RWChannel(name), int64(len(readers)))
		eventually(t, 5*time.Second, func() bool {
			return !slices.ContainsFunc(locks, func(l *client.Lock) bool {
				return calls.count(redisio.AcquireLatchKey(name, l.Owner())) == 0
			})
		}, "every reader tried and was refused")
		staysBlocked(t, e, entered, watchdog+200*time.Millisecond, "a reader while the writer holds the lock")
		assert.Equal(t, "write", e.rdb.HGet(ctx, name, "mode").Val(), "still write-held")

		require.NoError(t, writer.WriteLock().Unlock(ctx))
		for range n {
			r := wokenByMessage(t, entered, "a reader after the write unlock")
			require.NoError(t, r.err, "reader %d", r.i)
		}
		for i, l := range locks {
			assert.Equal(t, 1, get(t, l.HoldCount), "reader %d holds, beside the others", i)
		}
		assert.Equal(t, "read", e.rdb.HGet(ctx, name, "mode").Val())
		assert.False(t, tryLock(t, writer.WriteLock()), "no writer beside the readers")
		for _, l := range locks {
			require.NoError(t, l.Unlock(ctx))
		}
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the last read unlock frees the lock")
	})
}

func TestWriteThenReadThenDowngrade(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		rw, other := c.ReadWriteLock("rw-downgrade"), c.ReadWriteLock("rw-downgrade")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		require.True(t, tryLock(t, rw.WriteLock()), "the writer re-enters")
		require.True(t, tryLock(t, rw.ReadLock()), "the writer may read")
		assert.False(t, tryLock(t, other.ReadLock()), "others may not read while it writes")

		require.NoError(t, rw.ReadLock().Unlock(ctx))
		locked, _ := rw.WriteLock().IsLocked(ctx)
		assert.True(t, locked, "still write-locked after the read unlock")

		require.True(t, tryLock(t, rw.ReadLock()))
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		require.NoError(t, rw.WriteLock().Unlock(ctx)) // the write is gone: downgraded to a read
		n, err := rw.ReadLock().HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = rw.WriteLock().HoldCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "read", e.rdb.HGet(ctx, "rw-downgrade", "mode").Val())
		assert.True(t, tryLock(t, other.ReadLock()), "others read beside the downgraded holder")
		assert.False(t, tryLock(t, rw.WriteLock()), "no upgrade while reading, not even the same owner")
		require.NoError(t, other.ReadLock().Unlock(ctx))
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		assert.True(t, tryLock(t, rw.WriteLock()), "free again")
		require.NoError(t, rw.WriteLock().Unlock(ctx))
	})
}

func TestReadHolderCannotUpgrade(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		rw := e.newClient(t).ReadWriteLock("rw-upgrade")
		require.NoError(t, rw.ReadLock().Lock(ctx))
		assert.False(t, tryLock(t, rw.WriteLock()))
		assert.ErrorIs(t, rw.WriteLock().Unlock(ctx), client.ErrNotHeld)
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		assert.ErrorIs(t, rw.ReadLock().Unlock(ctx), client.ErrNotHeld)
	})
}

func TestReadLeaseBookkeeping(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		rw, writer := c.ReadWriteLock("rw-lease"), c.ReadWriteLock("rw-lease")
		ok, err := rw.ReadLock().TryLockWait(ctx, 0, 1500*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		e.advance(500 * time.Millisecond)
		// A longer reentrant hold, released at once: the lock must fall back
		// to the surviving short hold's time, not keep the longer one's.
		ok, err = rw.ReadLock().TryLockWait(ctx, 0, 10*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		ttl, err := rw.ReadLock().RemainTTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl, time.Second+50*time.Millisecond, "the TTL of the surviving hold")

		got := make(chan bool, 1)
		go func() {
			ok, err := writer.WriteLock().TryLockWait(ctx, 5*time.Second, 0)
			assert.NoError(t, err)
			got <- ok
		}()
		ok, took := awaitWhileTime(t, e, got, 3*time.Second, "the writer")
		assert.True(t, ok)
		assert.Less(t, took, 2*time.Second, "in once the short read hold expired")
		require.NoError(t, writer.WriteLock().Unlock(ctx))

		// The other way round, across clients: a short read hold expires
		// while a longer one survives. The short one's owner is told and its
		// field goes, but the lock lives on with the longer hold: the writer
		// stays out until that one ends too, then gets in.
		const longLease = 3 * time.Second
		shortRead := e.newClient(t).ReadWriteLock("rw-lease").ReadLock()
		longRead := e.newClient(t).ReadWriteLock("rw-lease").ReadLock()
		ok, err = shortRead.TryLockWait(ctx, 0, 500*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		longStart := e.clk.Now()
		ok, err = longRead.TryLockWait(ctx, 0, longLease)
		require.NoError(t, err)
		require.True(t, ok, "readers share")
		shortLost, longLost := shortRead.Lost(), longRead.Lost()
		wrote := inBackground(t, writer.WriteLock().Lock)

		awaitWhileTime(t, e, shortLost, 2*time.Second, "the short read hold's end")
		eventually(t, 2*time.Second, func() bool { return !e.rdb.HExists(ctx, "rw-lease", shortRead.Owner()).Val() },
			"the short read hold's field goes")
		assert.Zero(t, get(t, shortRead.HoldCount))
		assert.Equal(t, 1, get(t, longRead.HoldCount), "the longer read hold survives")
		assert.True(t, get(t, longRead.IsLocked))
		assert.Positive(t, e.rdb.PTTL(ctx, "rw-lease").Val(), "the lock lives on")
		staysBlocked(t, e, wrote, 500*time.Millisecond, "the writer while the longer read hold lasts")
		select {
		case <-longLost:
			t.Fatal("the longer read hold was told it ended with the short one")
		default:
		}

		r, _ := awaitWhileTime(t, e, wrote, 2*longLease, "the writer once the longer read hold ended")
		require.NoError(t, r.err)
		assert.GreaterOrEqual(t, e.clk.Now().Sub(longStart), longLease-50*time.Millisecond,
			"not in before the longer read hold's lease ran out")
		awaitWhileTime(t, e, longLost, 2*time.Second, "the longer read hold's end")
		assert.Zero(t, get(t, longRead.HoldCount))
		assert.Equal(t, 1, get(t, writer.WriteLock().HoldCount))
		require.NoError(t, writer.WriteLock().Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, "rw-lease").Val())
	})
}

// A write hold with a fixed lease that is never unlocked expires: another
// client's writer, blocked meanwhile, gets in once the lease ran out; the
// first holder is told and its Unlock then answers ErrNotHeld without
// touching the new holder's hold.
func TestWriteLeaseExpiresAndAnotherWriterGetsIn(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name, lease = "rw-write-lease", time.Second
		first := e.newClient(t).ReadWriteLock(name).WriteLock()
		start := e.clk.Now()
		require.NoError(t, first.LockLease(ctx, lease))
		lost := first.Lost()
		next := e.newClient(t).ReadWriteLock(name).WriteLock()
		got := inBackground(t, next.Lock)
		staysBlocked(t, e, got, 300*time.Millisecond, "the other writer while the lease lasts")

		r, _ := awaitWhileTime(t, e, got, 5*time.Second, "the other writer once the lease ran out")
		require.NoError(t, r.err)
		assert.GreaterOrEqual(t, e.clk.Now().Sub(start), lease-50*time.Millisecond, "not in before the lease ran out")
		awaitWhileTime(t, e, lost, 2*time.Second, "the first holder told its lease ran out")
		assert.Zero(t, get(t, first.HoldCount))

		require.ErrorIs(t, first.Unlock(ctx), client.ErrNotHeld)
		assert.Equal(t, 1, get(t, next.HoldCount), "the new holder's hold is untouched")
		assert.True(t, get(t, next.IsLocked))
		select {
		case <-next.Lost():
			t.Fatal("the new holder was told it lost the lock")
		default:
		}
		require.NoError(t, next.Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}

// The write lock re-entered by its owner, both times with a lease: two
// holds, each needing its unlock. The reentry adds its lease to the time
// left (SPEC §4, as Redisson), so the hold outlives the first lease and
// its owner is not told when that one would have ended; an unlock that
// leaves a hold sets the time left to the last acquire's lease (as
// Redisson's write unlock does).
func TestWriteLockReentryWithLeases(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name, lease1, lease2 = "rw-write-reenter", time.Second, 2 * time.Second
		rw := e.newClient(t).ReadWriteLock(name)
		other := e.newClient(t).ReadWriteLock(name)
		require.NoError(t, rw.WriteLock().LockLease(ctx, lease1))
		require.NoError(t, rw.WriteLock().LockLease(ctx, lease2))
		assert.Equal(t, 2, get(t, rw.WriteLock().HoldCount))
		assert.Zero(t, get(t, rw.ReadLock().HoldCount))
		ttl := get(t, rw.WriteLock().RemainTTL)
		assert.Greater(t, ttl, lease2, "the reentry added its lease to the time left, not set it")
		assert.LessOrEqual(t, ttl, lease1+lease2)

		lost := rw.WriteLock().Lost()
		e.advance(lease1 + 500*time.Millisecond)
		select {
		case <-lost:
			t.Fatal("told the hold ended with the first lease")
		default:
		}
		assert.Equal(t, 2, get(t, rw.WriteLock().HoldCount), "held past the first lease")
		assert.False(t, tryLock(t, other.WriteLock()), "another writer is kept out past the first lease")
		assert.False(t, tryLock(t, other.ReadLock()), "a reader too")

		require.NoError(t, rw.WriteLock().Unlock(ctx))
		assert.Equal(t, 1, get(t, rw.WriteLock().HoldCount), "one unlock leaves one hold")
		ttl = get(t, rw.WriteLock().RemainTTL)
		assert.Greater(t, ttl, lease2-500*time.Millisecond, "the unlock set the time left to the last acquire's lease")
		assert.LessOrEqual(t, ttl, lease2)
		assert.True(t, get(t, rw.WriteLock().IsLocked))
		assert.False(t, tryLock(t, other.WriteLock()), "still kept out after one unlock")
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		assert.Zero(t, get(t, rw.WriteLock().HoldCount))
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the second unlock frees the lock")
		assert.ErrorIs(t, rw.WriteLock().Unlock(ctx), client.ErrNotHeld, "no third hold")
		assert.True(t, tryLock(t, other.WriteLock()), "free for another writer")
		require.NoError(t, other.WriteLock().Unlock(ctx))
	})
}

// A writer holds with a fixed lease and never unlocks; two readers on
// other clients wait (Redisson's testWR and testWRR). Once the lease ran
// out both get in and share the lock; the writer's late Unlock answers
// ErrNotHeld.
func TestReadersGetInWhenTheWriteLeaseRunsOut(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name, lease = "rw-write-then-read", time.Second
		writer := e.newClient(t).ReadWriteLock(name).WriteLock()
		start := e.clk.Now()
		require.NoError(t, writer.LockLease(ctx, lease))
		readers := []*client.Lock{
			e.newClient(t).ReadWriteLock(name).ReadLock(),
			e.newClient(t).ReadWriteLock(name).ReadLock(),
		}
		waiting := newBackground(t, len(readers))
		for i, r := range readers {
			waiting.run(i, r.Lock)
		}
		entered := waiting.C
		staysBlocked(t, e, entered, 300*time.Millisecond, "a reader while the write lease lasts")

		for i := range readers {
			r, _ := awaitWhileTime(t, e, entered, 5*time.Second, "a reader once the write lease ran out")
			require.NoError(t, r.err, "reader %d", r.i)
			if i == 0 {
				assert.GreaterOrEqual(t, e.clk.Now().Sub(start), lease-50*time.Millisecond, "not in before the lease ran out")
			}
		}
		for i, r := range readers {
			assert.Equal(t, 1, get(t, r.HoldCount), "reader %d holds, beside the other", i)
		}
		assert.Equal(t, "read", e.rdb.HGet(ctx, name, "mode").Val())
		assert.ErrorIs(t, writer.Unlock(ctx), client.ErrNotHeld, "the writer's lease ran out")
		assert.False(t, tryLock(t, writer), "no writer beside the readers")
		for _, r := range readers {
			require.NoError(t, r.Unlock(ctx))
		}
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}

func TestReadWriteContention(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const n = 6
		var readers, writers holders
		locks := make([]*client.ReadWriteLock, n)
		for i := range locks {
			locks[i] = e.newClient(t).ReadWriteLock("rw-contention")
		}
		counter := 0
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 30 {
					if rand.IntN(3) == 0 {
						if err := locks[i].WriteLock().Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						writers.enter()
						if readers.now.Load() != 0 {
							t.Error("a writer beside readers")
						}
						v := counter
						time.Sleep(50 * time.Microsecond)
						counter = v + 1
						writers.leave()
						if err := locks[i].WriteLock().Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
						continue
					}
					if err := locks[i].ReadLock().Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					readers.enter()
					if writers.now.Load() != 0 {
						t.Error("a reader beside the writer")
					}
					time.Sleep(50 * time.Microsecond)
					readers.leave()
					if err := locks[i].ReadLock().Unlock(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		await.Group(t, &wg, 2*time.Minute, "the readers and writers")
		assert.LessOrEqual(t, writers.max.Load(), int32(1), "never two writers")
		assert.Positive(t, readers.max.Load())
		assert.Zero(t, e.rdb.Exists(ctx, "rw-contention").Val(), "nothing left held")
	})
}

func TestReadWriteWatchdogRenewsBothSides(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		rw := e.newClient(t).ReadWriteLock("rw-renew")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		require.NoError(t, rw.ReadLock().Lock(ctx))
		lostW, lostR := rw.WriteLock().Lost(), rw.ReadLock().Lost()
		e.advance(3 * watchdog)
		select {
		case <-lostW:
			t.Fatal("write hold lost while renewed")
		case <-lostR:
			t.Fatal("read hold lost while renewed")
		default:
		}
		n, err := rw.ReadLock().HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, int64(1), e.rdb.Exists(ctx, redisio.ReadTimeoutPrefix("rw-renew", rw.ReadLock().Owner())+":1").Val(),
			"the read hold's own timeout key is renewed too")
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, "rw-renew").Val())
	})
}

func TestDowngradeIsNotBlockedByALocalReaderWaiting(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := e.newClient(t)
		rw, other := c.ReadWriteLock("rw-local-downgrade"), c.ReadWriteLock("rw-local-downgrade")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		waiting := inBackground(t, other.ReadLock().Lock) // refused: the lock is write-held
		awaitCountSubscribers(t, e, redisio.RWChannel("rw-local-downgrade"), 1)
		// The writer's own read comes after a refused reader of the same
		// process (listening: nobody else does), and must not queue behind
		// it (it would wait for its own write unlock).
		require.NoError(t, rw.ReadLock().Lock(ctx), "the writer takes its read at once")
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		r, _ := awaitWhileTime(t, e, waiting, 2*time.Second, "the other reader")
		require.NoError(t, r.err)
		require.NoError(t, other.ReadLock().Unlock(ctx))
		require.NoError(t, rw.ReadLock().Unlock(ctx))
	})
}
