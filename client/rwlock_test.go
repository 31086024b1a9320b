package client_test

import (
	"context"
	"math/rand/v2"
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
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.newClient(t)
		r1, r2, w := c.ReadWriteLock("rw-share"), c.ReadWriteLock("rw-share"), c.ReadWriteLock("rw-share")
		require.True(t, tryLock(t, r1.ReadLock()))
		assert.False(t, tryLock(t, w.WriteLock()), "a reader excludes the writer")
		require.True(t, tryLock(t, r2.ReadLock()), "readers share")

		got := make(chan error, 1)
		go func() { got <- w.WriteLock().Lock(ctx) }()
		require.NoError(t, r1.ReadLock().Unlock(ctx))
		time.Sleep(30 * time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("the writer got in with a reader left: %v", err)
		default:
		}
		require.NoError(t, r2.ReadLock().Unlock(ctx))
		err, _ := awaitWhileTime(t, e, got, 2*time.Second, "the writer")
		require.NoError(t, err)
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

func TestWriteUnlockWakesEveryBlockedReader(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		writer := e.newClient(t).ReadWriteLock("rw-wake-all")
		require.NoError(t, writer.WriteLock().Lock(ctx))
		readers := []*client.Client{e.newClient(t), e.newClient(t)}
		const n = 20
		var inside, wg sync.WaitGroup
		inside.Add(n)
		release := make(chan struct{})
		for i := range n {
			rl := readers[i%2].ReadWriteLock("rw-wake-all").ReadLock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rl.Lock(ctx); err != nil {
					t.Error(err)
					inside.Done()
					return
				}
				inside.Done()
				<-release // all hold together
				if err := rl.Unlock(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, writer.WriteLock().Unlock(ctx))
		together := make(chan struct{})
		go func() { inside.Wait(); close(together) }()
		awaitWhileTime(t, e, together, 2*time.Second, "all 20 readers inside at once")
		close(release)
		await.Group(t, &wg, 10*time.Second, "the readers")
		assert.Zero(t, e.rdb.Exists(ctx, "rw-wake-all").Val())
	})
}

func TestWriteThenReadThenDowngrade(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
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
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		rw := e.newClient(t).ReadWriteLock("rw-upgrade")
		require.NoError(t, rw.ReadLock().Lock(ctx))
		assert.False(t, tryLock(t, rw.WriteLock()))
		assert.ErrorIs(t, rw.WriteLock().Unlock(ctx), client.ErrNotHeld)
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		assert.ErrorIs(t, rw.ReadLock().Unlock(ctx), client.ErrNotHeld)
	})
}

func TestReadLeaseBookkeeping(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
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
	})
}

func TestReadWriteContention(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
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
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
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
	both(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := e.newClient(t)
		rw, other := c.ReadWriteLock("rw-local-downgrade"), c.ReadWriteLock("rw-local-downgrade")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		waiting := make(chan error, 1)
		go func() { waiting <- other.ReadLock().Lock(ctx) }() // refused: the lock is write-held
		time.Sleep(30 * time.Millisecond)
		// The writer's own read comes after a refused reader of the same
		// process, and must not queue behind it (it would wait for its own
		// write unlock).
		require.NoError(t, rw.ReadLock().Lock(ctx), "the writer takes its read at once")
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		err, _ := awaitWhileTime(t, e, waiting, 2*time.Second, "the other reader")
		require.NoError(t, err)
		require.NoError(t, other.ReadLock().Unlock(ctx))
		require.NoError(t, rw.ReadLock().Unlock(ctx))
	})
}
