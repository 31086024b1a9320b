package client_test

import (
	"context"
	"fmt"
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
