package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// clusterWatchdog is the watchdog of cluster test clients unless a test asks
// for another: long, so that a waiter woken within a second or two was woken
// by pub/sub, never by its look-again (watchdog/3) or a lease running out.
const clusterWatchdog = 30 * time.Second

// promptly is how soon after the release a waiter woken by pub/sub gets in.
const promptly = 2 * time.Second

// clusterEnv is a 3-master Redis Cluster shared by the cluster subtests.
type clusterEnv struct {
	cluster *redistest.Cluster
	rdb     *redis.ClusterClient
	nodes   []*redis.Client // one plain client per master, for PUBSUB SHARDNUMSUB
}

func newClusterEnv(t *testing.T) *clusterEnv {
	c := redistest.StartCluster(t, 3)
	e := &clusterEnv{cluster: c, rdb: c.Client(t)}
	for _, s := range c.Nodes() {
		e.nodes = append(e.nodes, s.Client(t))
	}
	return e
}

// newClient starts a Client on the cluster in its own actor system
// (ownSystemClient) with a clusterWatchdog (opts may override it).
func (e *clusterEnv) newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	c, _, _ := ownSystemClient(t, e.rdb, append([]client.Option{client.WithWatchdogTimeout(clusterWatchdog)}, opts...)...)
	return c
}

// nameOn returns a lock name starting with prefix whose slot master node
// owns.
func (e *clusterEnv) nameOn(t *testing.T, node int, prefix string) string {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if e.cluster.NodeForSlot(redisio.Slot(name)) == node {
			return name
		}
	}
	t.Fatalf("no name with prefix %s on node %d", prefix, node)
	return ""
}

// shardSubscribers is how many connections subscribe the shard channel ch
// on the master that owns its slot.
func (e *clusterEnv) shardSubscribers(t *testing.T, ch string) int64 {
	t.Helper()
	node := e.cluster.NodeForSlot(redisio.Slot(ch))
	require.GreaterOrEqual(t, node, 0, "an owner for %s", ch)
	n, err := e.nodes[node].PubSubShardNumSub(context.Background(), ch).Result()
	require.NoError(t, err)
	return n[ch]
}

// listening reports, for wokenBy, whether ch has a subscriber on its
// master.
func (e *clusterEnv) listening(t *testing.T, ch string) func() bool {
	return func() bool { return e.shardSubscribers(t, ch) == 1 }
}

// awaitShardSubscribers waits until ch has n subscribers on its master.
func (e *clusterEnv) awaitShardSubscribers(t *testing.T, ch string, n int64) {
	t.Helper()
	eventually(t, 5*time.Second, func() bool { return e.shardSubscribers(t, ch) == n },
		fmt.Sprintf("%d sharded subscribers of %s", n, ch))
}

func TestCluster(t *testing.T) {
	e := newClusterEnv(t)
	ctx := testCtx(t)

	t.Run("LockUnlockReentryHoldCount", func(t *testing.T) {
		c := e.newClient(t)
		for node := range 3 {
			name := e.nameOn(t, node, "reentrant")
			l, other := c.Lock(name), c.Lock(name)
			require.NoError(t, l.Lock(ctx))
			require.True(t, tryLock(t, l), "the owner re-enters")
			assert.Equal(t, 2, get(t, l.HoldCount))
			assert.Equal(t, "2", e.rdb.HGet(ctx, name, l.Owner()).Val(), "Redis count matches on node %d", node)
			assert.False(t, tryLock(t, other), "another owner is refused")

			require.NoError(t, l.Unlock(ctx))
			assert.True(t, get(t, l.IsHeld), "still held once")
			assert.Greater(t, get(t, l.RemainTTL), clusterWatchdog/2)
			require.NoError(t, l.Unlock(ctx))
			assert.False(t, get(t, l.IsLocked))
			require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)

			require.True(t, tryLock(t, other), "free after the last unlock")
			ok, err := l.ForceUnlock(ctx)
			require.NoError(t, err)
			assert.True(t, ok)
			require.ErrorIs(t, other.Unlock(ctx), client.ErrNotHeld, "force-unlocked")
		}
	})

	t.Run("TryLockBetweenTwoClients", func(t *testing.T) {
		name := e.nameOn(t, 1, "try")
		a, b := e.newClient(t).Lock(name), e.newClient(t).Lock(name)
		require.NoError(t, a.LockLease(ctx, time.Minute))
		assert.False(t, tryLock(t, b))
		start := time.Now()
		ok, err := b.TryLockWait(ctx, 200*time.Millisecond, 0)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.GreaterOrEqual(t, time.Since(start), 190*time.Millisecond, "waited its wait")
		require.NoError(t, a.Unlock(ctx))
		assert.True(t, tryLock(t, b))
		assert.False(t, tryLock(t, a))
		require.NoError(t, b.Unlock(ctx))
	})

	t.Run("WaiterWokenByShardedPubSub", func(t *testing.T) {
		holderClient, waiterClient := e.newClient(t), e.newClient(t)
		for node := range 3 {
			name := e.nameOn(t, node, "handoff")
			holder, waiter := holderClient.Lock(name), waiterClient.Lock(name)
			require.NoError(t, holder.LockLease(ctx, time.Minute), "a long lease: polling on the PTTL would take a minute")
			ch := redisio.LockChannel(name)
			woke := wokenBy(t, waiter.Lock, e.listening(t, ch), holder.Unlock)
			assert.Less(t, woke, promptly, "woken by sharded pub/sub on node %d, not by polling", node)
			require.NoError(t, waiter.Unlock(ctx))
			e.awaitShardSubscribers(t, ch, 0)
		}
	})

	t.Run("WatchdogRenewsNamesOnEveryShard", func(t *testing.T) {
		const watchdog = 600 * time.Millisecond
		c := e.newClient(t, client.WithWatchdogTimeout(watchdog))
		var locks []*client.Lock
		for node := range 3 {
			for i := range 2 {
				l := c.Lock(e.nameOn(t, node, fmt.Sprint("renewed-", i)))
				require.NoError(t, l.Lock(ctx))
				locks = append(locks, l)
			}
		}
		time.Sleep(4 * watchdog) // renewals (every watchdog/3) must keep all alive
		for _, l := range locks {
			require.True(t, get(t, l.IsHeld), "%s renewed across four watchdog timeouts", l.Name())
			assert.Greater(t, get(t, l.RemainTTL), watchdog/3, l.Name())
			select {
			case <-l.Lost():
				t.Fatalf("%s reported lost", l.Name())
			default:
			}
		}
		for _, l := range locks {
			require.NoError(t, l.Unlock(ctx))
		}
	})

	t.Run("FairLockOrder", func(t *testing.T) {
		name := e.nameOn(t, 2, "fair")
		clients := []*client.Client{e.newClient(t), e.newClient(t)}
		holder := clients[0].FairLock(name)
		require.NoError(t, holder.Lock(ctx))
		order, took := fairOrder(t, e.rdb, clients, holder, 4, nil)
		assert.Less(t, took, 4*promptly, "each woken on its own channel")
		assert.Equal(t, []int{0, 1, 2, 3}, order, "acquired in arrival order")
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name)).Val())
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairTimeoutKey(name)).Val())
	})

	t.Run("WriteUnlockWakesReaders", func(t *testing.T) {
		name := e.nameOn(t, 0, "rw")
		writer := e.newClient(t).ReadWriteLock(name).WriteLock()
		require.NoError(t, writer.LockLease(ctx, time.Minute))
		readerClient := e.newClient(t)
		const n = 3
		var readers []*client.Lock
		var waits []func(context.Context) error
		for range n {
			r := readerClient.ReadWriteLock(name).ReadLock()
			readers = append(readers, r)
			waits = append(waits, r.Lock)
		}
		for _, woke := range wokenAll(t, waits, e.listening(t, redisio.RWChannel(name)), writer.Unlock) {
			assert.Less(t, woke, promptly, "woken by the write unlock's message")
		}
		for _, r := range readers {
			require.NoError(t, r.Unlock(ctx))
		}
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})

	t.Run("SemaphoreReleaseWakesAcquire", func(t *testing.T) {
		name := e.nameOn(t, 1, "sem")
		s := e.newClient(t).Semaphore(name)
		set(t, s.TrySetPermits, 1)
		require.NoError(t, s.Acquire(ctx, 1))
		releaser := e.newClient(t).Semaphore(name)
		woke := wokenBy(t, func(ctx context.Context) error { return s.Acquire(ctx, 1) },
			e.listening(t, redisio.SemaphoreChannel(name)),
			func(ctx context.Context) error { return releaser.Release(ctx, 1) })
		assert.Less(t, woke, promptly, "woken by the release's message, not the look-again")
		assert.Zero(t, get(t, s.AvailablePermits))
	})

	t.Run("LatchCountDownWakesAwait", func(t *testing.T) {
		name := e.nameOn(t, 2, "latch")
		set(t, e.newClient(t).CountDownLatch(name).TrySetCount, 1)
		waiter := e.newClient(t)
		const n = 3
		counter := e.newClient(t).CountDownLatch(name)
		var awaits []func(context.Context) error
		for range n {
			awaits = append(awaits, waiter.CountDownLatch(name).Await)
		}
		for _, woke := range wokenAll(t, awaits, e.listening(t, redisio.LatchChannel(name)), counter.CountDown) {
			assert.Less(t, woke, promptly, "woken by the latch's zero message")
		}
	})

	t.Run("ContentionOnEveryShard", func(t *testing.T) {
		clients := make([]*client.Client, 4)
		for i := range clients {
			clients[i] = e.newClient(t, client.WithWatchdogTimeout(time.Second))
		}
		for node := range 3 {
			name := e.nameOn(t, node, "contended")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				locks := make([]*client.Lock, len(clients))
				for i, c := range clients {
					locks[i] = c.Lock(name)
				}
				contendLocks(t, locks, 25)
			})
		}
	})

	t.Run("WaiterKeepsListeningWhenTheSlotMoves", func(t *testing.T) {
		name := e.nameOn(t, 1, "moving-wait")
		slot, ch := redisio.Slot(name), redisio.LockChannel(name)
		holder, waiter := e.newClient(t).Lock(name), e.newClient(t).Lock(name)
		require.NoError(t, holder.LockLease(ctx, time.Minute))
		acquired := inBackground(t, waiter.Lock)
		e.awaitShardSubscribers(t, ch, 1)
		// Redis drops the channel's subscription with the slot; the engine
		// subscribes it again on the slot's new master.
		e.cluster.MigrateSlot(t, slot, 0)
		e.awaitShardSubscribers(t, ch, 1)
		time.Sleep(50 * time.Millisecond) // the retry on the new subscription's confirmation has run
		released := time.Now()
		require.NoError(t, holder.Unlock(ctx))
		r := await.Value(t, acquired, 5*time.Second, "the waiter, woken on the slot's new master")
		require.NoError(t, r.err)
		assert.Less(t, r.at.Sub(released), promptly, "woken by the message, not by polling")
		require.NoError(t, waiter.Unlock(ctx))
		e.awaitShardSubscribers(t, ch, 0)
	})

	t.Run("ContentionWhileTheSlotMigrates", func(t *testing.T) {
		name := e.nameOn(t, 0, "migrating")
		slot := redisio.Slot(name)
		const workers, before, after = 4, 15, 15
		locks := make([]*client.Lock, workers)
		for i := range locks {
			locks[i] = e.newClient(t, client.WithWatchdogTimeout(time.Second)).Lock(name)
		}
		var progress [workers]atomic.Int32
		var total atomic.Int32
		migrated := make(chan struct{})
		var atMove [workers]int32
		t.Run("run", func(t *testing.T) {
			t.Run("contend", func(t *testing.T) {
				t.Parallel()
				contend(t, workers, before+after, 1,
					func(i int) error {
						if progress[i].Load() == before {
							// No worker runs out of iterations before the move.
							<-migrated
						}
						if err := locks[i].Lock(ctx); err != nil {
							return err
						}
						progress[i].Add(1)
						total.Add(1)
						return nil
					},
					func(i int) error { return locks[i].Unlock(ctx) })
			})
			t.Run("migrate", func(t *testing.T) {
				t.Parallel()
				defer close(migrated)
				eventually(t, 30*time.Second, func() bool { return total.Load() >= workers*before/3 },
					"contention under way")
				e.cluster.MigrateSlot(t, slot, 2)
				require.Equal(t, 2, e.cluster.NodeForSlot(slot))
				for i := range atMove {
					atMove[i] = progress[i].Load()
				}
				t.Logf("moved slot %d at %v acquisitions per worker", slot, atMove)
			})
		})
		for i := range workers {
			assert.Greater(t, progress[i].Load(), atMove[i], "worker %d made progress after the move", i)
		}
		locked, err := locks[0].IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "every holding released")
	})
}

// A primitive kind, for the name tests: its handle on a Client.
type namedPrimitive struct {
	kind     string
	latch    bool
	calls    func(c *client.Client, name string) map[string]func(context.Context) error
	exercise func(t *testing.T, c, other *client.Client, name string)
}

// lockCalls are every call of a lock handle made by mk, each returning its
// error.
// lockHandle is what lockCalls calls: a *client.Lock or a *client.FencedLock.
type lockHandle interface {
	client.Mutex
	ForceUnlock(ctx context.Context) (bool, error)
	Extend(ctx context.Context, lease time.Duration) error
	IsLocked(ctx context.Context) (bool, error)
	HoldCount(ctx context.Context) (int, error)
	RemainTTL(ctx context.Context) (time.Duration, error)
}

func lockCalls[L lockHandle](mk func(c *client.Client, name string) L) func(*client.Client, string) map[string]func(context.Context) error {
	return func(c *client.Client, name string) map[string]func(context.Context) error {
		l := mk(c, name)
		return map[string]func(context.Context) error{
			"Lock":        l.Lock,
			"LockLease":   func(ctx context.Context) error { return l.LockLease(ctx, time.Second) },
			"TryLock":     func(ctx context.Context) error { _, err := l.TryLock(ctx); return err },
			"TryLockWait": func(ctx context.Context) error { _, err := l.TryLockWait(ctx, 10*time.Millisecond, 0); return err },
			"Unlock":      l.Unlock,
			"ForceUnlock": func(ctx context.Context) error { _, err := l.ForceUnlock(ctx); return err },
			"IsLocked":    func(ctx context.Context) error { _, err := l.IsLocked(ctx); return err },
			"HoldCount":   func(ctx context.Context) error { _, err := l.HoldCount(ctx); return err },
			"RemainTTL":   func(ctx context.Context) error { _, err := l.RemainTTL(ctx); return err },
			"Extend":      func(ctx context.Context) error { return l.Extend(ctx, time.Second) },
		}
	}
}

// exerciseLock takes the lock made by mk on c, checks that other's handle
// is refused and then gets it once c unlocks (woken by pub/sub).
func exerciseLock(mk func(c *client.Client, name string) *client.Lock) func(*testing.T, *client.Client, *client.Client, string) {
	return func(t *testing.T, c, other *client.Client, name string) {
		ctx := testCtx(t)
		l, o := mk(c, name), mk(other, name)
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Lock(ctx), "reentry")
		assert.Equal(t, 2, get(t, l.HoldCount))
		assert.True(t, get(t, l.IsLocked))
		assert.Greater(t, get(t, l.RemainTTL), time.Duration(0))
		ok, err := o.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "another owner is refused")
		waited := inBackground(t, o.Lock)
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, within(t, waited).err, "the waiter gets the lock")
		require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)
		require.NoError(t, o.Unlock(ctx))
		assert.False(t, get(t, o.IsLocked))
	}
}

// exerciseNonReentrant is exerciseLock for a non-reentrant lock: the
// holder's second Lock is refused (ErrAlreadyHeld), its fixed lease is
// extended, and one unlock lets the waiter in.
func exerciseNonReentrant(mk func(c *client.Client, name string) *client.Lock) func(*testing.T, *client.Client, *client.Client, string) {
	return func(t *testing.T, c, other *client.Client, name string) {
		ctx := testCtx(t)
		l, o := mk(c, name), mk(other, name)
		require.NoError(t, l.LockLease(ctx, time.Second))
		require.ErrorIs(t, l.Lock(ctx), client.ErrAlreadyHeld)
		assert.Equal(t, 1, get(t, l.HoldCount))
		require.NoError(t, l.Extend(ctx, time.Minute))
		assert.Greater(t, get(t, l.RemainTTL), 50*time.Second, "extended")
		ok, err := o.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "another owner is refused")
		waited := inBackground(t, o.Lock)
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, within(t, waited).err, "the waiter gets the lock")
		require.NoError(t, o.Unlock(ctx))
		assert.False(t, get(t, o.IsLocked))
	}
}

// within returns what a background call returned, failing t if it did not
// return within 10 s.
func within(t *testing.T, ch <-chan returned) returned {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the background call did not return within 10s")
		return returned{}
	}
}

// fresh deletes what another primitive left at name (the primitives of
// one name share its key).
func fresh(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	for _, k := range []string{name, redisio.PermitTimeoutKey(name)} {
		require.NoError(t, rdb.Del(context.Background(), k).Err())
	}
}

var namedPrimitives = []namedPrimitive{
	{kind: "Lock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.Lock(n) }),
		exercise: exerciseLock(func(c *client.Client, n string) *client.Lock { return c.Lock(n) })},
	{kind: "FairLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.FairLock(n) }),
		exercise: exerciseLock(func(c *client.Client, n string) *client.Lock { return c.FairLock(n) })},
	{kind: "SpinLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.SpinLock(n) }),
		exercise: exerciseLock(func(c *client.Client, n string) *client.Lock { return c.SpinLock(n) })},
	{kind: "ReadLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.ReadWriteLock(n).ReadLock() }),
		exercise: func(t *testing.T, c, other *client.Client, name string) {
			ctx := testCtx(t)
			r1, r2, w := c.ReadWriteLock(name).ReadLock(), other.ReadWriteLock(name).ReadLock(), other.ReadWriteLock(name).WriteLock()
			require.NoError(t, r1.LockLease(ctx, time.Minute), "a read hold with a lease of its own")
			require.NoError(t, r2.Lock(ctx), "readers share")
			ok, err := w.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "the writer waits for the readers")
			waited := inBackground(t, w.Lock)
			require.NoError(t, r1.Unlock(ctx))
			require.NoError(t, r2.Unlock(ctx))
			require.NoError(t, within(t, waited).err, "the writer gets in")
			require.NoError(t, w.Unlock(ctx))
		}},
	{kind: "WriteLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.ReadWriteLock(n).WriteLock() }),
		exercise: exerciseLock(func(c *client.Client, n string) *client.Lock { return c.ReadWriteLock(n).WriteLock() })},
	{kind: "NonReentrantLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.NonReentrantLock(n) }),
		exercise: exerciseNonReentrant(func(c *client.Client, n string) *client.Lock { return c.NonReentrantLock(n) })},
	{kind: "NonReentrantFairLock", calls: lockCalls(func(c *client.Client, n string) *client.Lock { return c.NonReentrantFairLock(n) }),
		exercise: exerciseNonReentrant(func(c *client.Client, n string) *client.Lock { return c.NonReentrantFairLock(n) })},
	{kind: "FencedLock",
		calls: func(c *client.Client, name string) map[string]func(context.Context) error {
			f := c.FencedLock(name)
			calls := lockCalls(func(*client.Client, string) *client.FencedLock { return f })(c, name)
			calls["LockToken"] = func(ctx context.Context) error { _, err := f.LockToken(ctx); return err }
			calls["TryLockToken"] = func(ctx context.Context) error { _, _, err := f.TryLockToken(ctx, 0, 0); return err }
			calls["Token"] = func(ctx context.Context) error { _, err := f.Token(ctx); return err }
			return calls
		},
		exercise: func(t *testing.T, c, other *client.Client, name string) {
			ctx := testCtx(t)
			f, g := c.FencedLock(name), other.FencedLock(name)
			t1, err := f.LockToken(ctx)
			require.NoError(t, err)
			assert.Equal(t, t1, get(t, f.Token))
			require.NoError(t, f.Unlock(ctx))
			t2, err := g.LockToken(ctx)
			require.NoError(t, err)
			assert.Greater(t, t2, t1, "tokens increase")
			require.NoError(t, g.Unlock(ctx))
		}},
	{kind: "Semaphore",
		calls: func(c *client.Client, name string) map[string]func(context.Context) error {
			s := c.Semaphore(name)
			return map[string]func(context.Context) error{
				"Acquire":          func(ctx context.Context) error { return s.Acquire(ctx, 1) },
				"TryAcquire":       func(ctx context.Context) error { _, err := s.TryAcquire(ctx, 1, 0); return err },
				"Release":          func(ctx context.Context) error { return s.Release(ctx, 1) },
				"TrySetPermits":    func(ctx context.Context) error { _, err := s.TrySetPermits(ctx, 1); return err },
				"AddPermits":       func(ctx context.Context) error { return s.AddPermits(ctx, 1) },
				"AvailablePermits": func(ctx context.Context) error { _, err := s.AvailablePermits(ctx); return err },
				"DrainPermits":     func(ctx context.Context) error { _, err := s.DrainPermits(ctx); return err },
				"TrySetPermitsTTL": func(ctx context.Context) error { _, err := s.TrySetPermitsTTL(ctx, 1, time.Second); return err },
				"SetPermits":       func(ctx context.Context) error { return s.SetPermits(ctx, 1) },
				"ReleaseIfExists":  func(ctx context.Context) error { _, err := s.ReleaseIfExists(ctx, 1); return err },
				"Expire":           func(ctx context.Context) error { _, err := s.Expire(ctx, time.Second); return err },
				"ExpireAt":         func(ctx context.Context) error { _, err := s.ExpireAt(ctx, time.Now().Add(time.Hour)); return err },
				"ClearExpire":      func(ctx context.Context) error { _, err := s.ClearExpire(ctx); return err },
				"RemainTTL":        func(ctx context.Context) error { _, err := s.RemainTTL(ctx); return err },
				"Delete":           func(ctx context.Context) error { _, err := s.Delete(ctx); return err },
			}
		},
		exercise: func(t *testing.T, c, other *client.Client, name string) {
			ctx := testCtx(t)
			s, o := c.Semaphore(name), other.Semaphore(name)
			set(t, s.TrySetPermits, 1)
			require.NoError(t, s.Acquire(ctx, 1))
			waited := inBackground(t, func(ctx context.Context) error { return o.Acquire(ctx, 1) })
			require.NoError(t, s.Release(ctx, 1))
			require.NoError(t, within(t, waited).err, "the release wakes the other acquire")
			require.NoError(t, s.AddPermits(ctx, 2))
			assert.Equal(t, int64(2), get(t, o.DrainPermits))
			require.NoError(t, o.SetPermits(ctx, 1))
			ok, err := s.ReleaseIfExists(ctx, 1)
			require.NoError(t, err)
			assert.True(t, ok)
			ok, err = s.Expire(ctx, time.Minute)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Greater(t, get(t, o.RemainTTL), 59*time.Second)
			ok, err = o.Delete(ctx)
			require.NoError(t, err)
			assert.True(t, ok)
			ok, err = s.TrySetPermitsTTL(ctx, 1, time.Minute)
			require.NoError(t, err)
			assert.True(t, ok, "set anew once deleted")
			_, err = s.Delete(ctx)
			require.NoError(t, err)
		}},
	{kind: "PermitExpirableSemaphore",
		calls: func(c *client.Client, name string) map[string]func(context.Context) error {
			p := c.PermitExpirableSemaphore(name)
			const id = "0123456789abcdef0123456789abcdef"
			return map[string]func(context.Context) error{
				"Acquire":          func(ctx context.Context) error { _, err := p.Acquire(ctx, time.Second); return err },
				"TryAcquire":       func(ctx context.Context) error { _, _, err := p.TryAcquire(ctx, 0, time.Second); return err },
				"Release":          func(ctx context.Context) error { return p.Release(ctx, id) },
				"TryRelease":       func(ctx context.Context) error { _, err := p.TryRelease(ctx, id); return err },
				"UpdateLease":      func(ctx context.Context) error { _, err := p.UpdateLease(ctx, id, time.Second); return err },
				"TrySetPermits":    func(ctx context.Context) error { _, err := p.TrySetPermits(ctx, 1); return err },
				"AddPermits":       func(ctx context.Context) error { return p.AddPermits(ctx, 1) },
				"AvailablePermits": func(ctx context.Context) error { _, err := p.AvailablePermits(ctx); return err },
				"AcquirePermits":   func(ctx context.Context) error { _, err := p.AcquirePermits(ctx, 2, time.Second); return err },
				"TryAcquirePermits": func(ctx context.Context) error {
					_, _, err := p.TryAcquirePermits(ctx, 2, 0, time.Second)
					return err
				},
				"ReleasePermits":    func(ctx context.Context) error { return p.ReleasePermits(ctx, id) },
				"TryReleasePermits": func(ctx context.Context) error { _, err := p.TryReleasePermits(ctx, id); return err },
				"RemainLease":       func(ctx context.Context) error { _, err := p.RemainLease(ctx, id); return err },
				"SetPermits":        func(ctx context.Context) error { return p.SetPermits(ctx, 1) },
				"Permits":           func(ctx context.Context) error { _, err := p.Permits(ctx); return err },
				"AcquiredPermits":   func(ctx context.Context) error { _, err := p.AcquiredPermits(ctx); return err },
				"Expire":            func(ctx context.Context) error { _, err := p.Expire(ctx, time.Second); return err },
				"ExpireAt":          func(ctx context.Context) error { _, err := p.ExpireAt(ctx, time.Now().Add(time.Hour)); return err },
				"ClearExpire":       func(ctx context.Context) error { _, err := p.ClearExpire(ctx); return err },
				"RemainTTL":         func(ctx context.Context) error { _, err := p.RemainTTL(ctx); return err },
				"Delete":            func(ctx context.Context) error { _, err := p.Delete(ctx); return err },
			}
		},
		exercise: func(t *testing.T, c, other *client.Client, name string) {
			ctx := testCtx(t)
			p, o := c.PermitExpirableSemaphore(name), other.PermitExpirableSemaphore(name)
			set(t, p.TrySetPermits, 1)
			id, err := p.Acquire(ctx, time.Minute)
			require.NoError(t, err)
			ok, err := p.UpdateLease(ctx, id, 2*time.Minute)
			require.NoError(t, err)
			assert.True(t, ok)
			got := make(chan string, 1)
			waited := inBackground(t, func(ctx context.Context) error {
				id, err := o.Acquire(ctx, time.Minute)
				got <- id
				return err
			})
			require.NoError(t, p.Release(ctx, id))
			require.NoError(t, within(t, waited).err, "the release wakes the other acquire")
			require.NoError(t, o.Release(ctx, <-got))
			assert.Equal(t, int64(1), get(t, p.AvailablePermits))
			require.NoError(t, o.SetPermits(ctx, 3))
			ids, err := p.AcquirePermits(ctx, 2, time.Minute)
			require.NoError(t, err)
			left, err := o.RemainLease(ctx, ids[1])
			require.NoError(t, err)
			assert.Greater(t, left, 59*time.Second)
			assert.Equal(t, int64(2), get(t, o.AcquiredPermits))
			assert.Equal(t, int64(3), get(t, o.Permits))
			ok, err = p.Expire(ctx, time.Minute)
			require.NoError(t, err)
			assert.True(t, ok, "both keys, one slot")
			require.NoError(t, o.ReleasePermits(ctx, ids...))
			ok, err = o.Delete(ctx)
			require.NoError(t, err)
			assert.True(t, ok)
		}},
	{kind: "CountDownLatch", latch: true,
		calls: func(c *client.Client, name string) map[string]func(context.Context) error {
			d := c.CountDownLatch(name)
			return map[string]func(context.Context) error{
				"TrySetCount": func(ctx context.Context) error { _, err := d.TrySetCount(ctx, 1); return err },
				"CountDown":   d.CountDown,
				"Count":       func(ctx context.Context) error { _, err := d.Count(ctx); return err },
				"Await":       d.Await,
				"TryAwait":    func(ctx context.Context) error { _, err := d.TryAwait(ctx, 10*time.Millisecond); return err },
				"Delete":      func(ctx context.Context) error { _, err := d.Delete(ctx); return err },
			}
		},
		exercise: func(t *testing.T, c, other *client.Client, name string) {
			ctx := testCtx(t)
			d, o := c.CountDownLatch(name), other.CountDownLatch(name)
			set(t, d.TrySetCount, 2)
			waited := inBackground(t, o.Await)
			require.NoError(t, d.CountDown(ctx))
			assert.Equal(t, int64(1), get(t, o.Count))
			require.NoError(t, d.CountDown(ctx))
			require.NoError(t, within(t, waited).err, "the count reaching zero wakes the waiter")
			set(t, d.TrySetCount, 2)
			waited = inBackground(t, o.Await)
			ok, err := d.Delete(ctx)
			require.NoError(t, err)
			assert.True(t, ok)
			require.NoError(t, within(t, waited).err, "the delete wakes the waiter")
		}},
}

// spanningNames are names whose keys Redis Cluster would put in several
// slots (for every primitive); latchSpanningNames are further names only a
// latch's keys would spread (its channel puts the name in braces whatever
// it holds); oddNames are names with braces that work on a cluster for
// every other primitive.
var (
	spanningNames      = []string{"a}b", "job}1", "x{}y", "{a", "}a", "{}"}
	latchSpanningNames = []string{"{order}:lock", "a{b}c", "a}{b}"}
	oddNames           = latchSpanningNames
)

// On a Redis Cluster a name whose keys would span slots is refused when
// the handle is made, by every call on it, as an invalid argument that
// says why: never a CROSSSLOT from Redis at run time. Names with a hash
// tag of their own work end to end; on a single node every name works.
func TestClusterNamesThatSpanSlots(t *testing.T) {
	t.Parallel()
	e := newClusterEnv(t)
	ctx := testCtx(t)
	c, other := e.newClient(t), e.newClient(t)

	t.Run("refused by every call of every primitive", func(t *testing.T) {
		for _, p := range namedPrimitives {
			names := spanningNames
			if p.latch {
				names = append(names[:len(names):len(names)], latchSpanningNames...)
			}
			for _, name := range names {
				for call, run := range p.calls(c, name) {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					err := run(cctx)
					cancel()
					require.ErrorIs(t, err, client.ErrInvalidArgument, "%s %q: %s", p.kind, name, call)
					assert.True(t, strings.HasPrefix(err.Error(), "warden: invalid argument: name: "),
						"%s %q: %s: refused before Redis: %v", p.kind, name, call, err)
					assert.Contains(t, err.Error(), "on a Redis Cluster the name's keys would span hash slots",
						"%s %q: %s says why", p.kind, name, call)
					assert.Contains(t, err.Error(), fmt.Sprintf("%q", name))
				}
			}
		}
	})

	t.Run("names with a hash tag of their own work", func(t *testing.T) {
		for _, p := range namedPrimitives {
			names := oddNames
			if p.latch {
				names = nil
			}
			for _, name := range append(names[:len(names):len(names)], "plain-"+p.kind) {
				t.Run(p.kind+" "+name, func(t *testing.T) {
					fresh(t, e.rdb, name)
					p.exercise(t, c, other, name)
				})
			}
		}
		fresh(t, e.rdb, "{order}:lock")
	})

	t.Run("an actor application's request is refused too", func(t *testing.T) {
		sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(slog.DiscardHandler)
		}))
		t.Cleanup(sys.Shutdown)
		app, err := client.New(e.rdb, client.WithActorSystem(sys))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, app.Close(ctx)) })
		for i, name := range spanningNames {
			reply, err := sys.Root.RequestFuture(app.PID(), &messages.Acquire{Name: name, Kind: messages.KindLock,
				Owner: "app:1", RequestID: fmt.Sprintf("r%d", i)}, 5*time.Second).Result()
			require.NoError(t, err)
			failed, ok := reply.(*messages.AcquireFailed)
			require.True(t, ok, "%q: refused, not %T", name, reply)
			require.ErrorIs(t, failed.Err, client.ErrInvalidArgument, "%q", name)
			assert.Contains(t, failed.Err.Error(), "would span hash slots")
		}
		reply, err := sys.Root.RequestFuture(app.PID(), &messages.Acquire{Name: "{order}:lock", Kind: messages.KindLock,
			Owner: "app:1", RequestID: "ok"}, 5*time.Second).Result()
		require.NoError(t, err)
		require.IsType(t, &messages.Acquired{}, reply, "a name with its own hash tag is served: %+v", reply)
		_, err = sys.Root.RequestFuture(app.PID(), &messages.Release{Name: "{order}:lock", Kind: messages.KindLock,
			Owner: "app:1", RequestID: "rel"}, 5*time.Second).Result()
		require.NoError(t, err)
	})
}

// On a single node (no slots) the names refused on a cluster work.
func TestSpanningNamesWorkOnASingleNode(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	c, _, _ := ownSystemClient(t, rdb)
	other, _, _ := ownSystemClient(t, rdb)
	for _, p := range namedPrimitives {
		for _, name := range append(spanningNames[:len(spanningNames):len(spanningNames)], latchSpanningNames...) {
			t.Run(p.kind+" "+name, func(t *testing.T) {
				fresh(t, rdb, name)
				p.exercise(t, c, other, name)
			})
		}
	}
}
