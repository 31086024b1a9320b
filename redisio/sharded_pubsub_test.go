package redisio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// eventWait bounds every wait for a pub/sub event in these tests.
const eventWait = 5 * time.Second

// shardedEnv is one 3-master cluster shared by the sharded pub/sub tests.
type shardedEnv struct {
	cluster *redistest.Cluster
	rdb     *redis.ClusterClient
}

// channelOn returns the lock channel of a name starting with prefix whose
// slot node owns.
func (e *shardedEnv) channelOn(t *testing.T, node int, prefix string) string {
	t.Helper()
	for i := range 1000 {
		ch := LockChannel(fmt.Sprintf("%s-%d", prefix, i))
		if e.cluster.NodeForSlot(Slot(ch)) == node {
			return ch
		}
	}
	t.Fatalf("no channel on node %d", node)
	return ""
}

// sameSlot returns a channel other than ch in ch's slot.
func sameSlot(t *testing.T, ch string) string {
	t.Helper()
	for i := range 100000 {
		other := fmt.Sprintf("redisson_sc:{x%d}", i)
		if Slot(other) == Slot(ch) {
			return other
		}
	}
	t.Fatalf("no channel in the slot of %s", ch)
	return ""
}

func newSharded(t *testing.T, rdb *redis.ClusterClient) PubSub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ps := NewShardedPubSub(ctx, rdb)
	t.Cleanup(func() {
		cancel()
		_ = ps.Close()
	})
	return ps
}

// expect reads events until one of kind on channel arrives, skipping
// others, and fails on an error or after eventWait.
func expect(t *testing.T, ps PubSub, kind EventKind, channel string) Event {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no event %d on %s within %v", kind, channel, eventWait)
		}
		ev, err := ps.Receive(context.Background(), left)
		require.NoError(t, err, "waiting for event %d on %s", kind, channel)
		if ev.Kind == kind && ev.Channel == channel {
			return ev
		}
	}
}

// expectAll reads events until every channel has had one of kind.
func expectAll(t *testing.T, ps PubSub, kind EventKind, channels ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, ch := range channels {
		want[ch] = true
	}
	deadline := time.Now().Add(eventWait)
	for len(want) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no event %d on %v within %v", kind, want, eventWait)
		}
		ev, err := ps.Receive(context.Background(), left)
		require.NoError(t, err, "waiting for event %d on %v", kind, want)
		if ev.Kind == kind {
			delete(want, ev.Channel)
		}
	}
}

// receiveMessages reads events until n messages arrived, and returns the last
// payload per channel.
func receiveMessages(t *testing.T, ps PubSub, n int) map[string]string {
	t.Helper()
	got := map[string]string{}
	deadline := time.Now().Add(eventWait)
	for n > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("%d messages missing after %v (got %v)", n, eventWait, got)
		}
		ev, err := ps.Receive(context.Background(), left)
		require.NoError(t, err, "waiting for %d messages", n)
		if ev.Kind == EventMessage {
			got[ev.Channel] = ev.Payload
			n--
		}
	}
	return got
}

// subscribers returns how many connections of node i subscribe ch.
func (e *shardedEnv) subscribers(t *testing.T, i int, ch string) int64 {
	t.Helper()
	n, err := e.cluster.Nodes()[i].Client(t).PubSubShardNumSub(context.Background(), ch).Result()
	require.NoError(t, err)
	return n[ch]
}

func (e *shardedEnv) publish(t *testing.T, ch, msg string) {
	t.Helper()
	n, err := e.rdb.SPublish(context.Background(), ch, msg).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "one subscriber of %s", ch)
}

// shardCount is the number of open shard connections.
func shardCount(ps PubSub) int {
	p := ps.(*shardedPubSub)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.shards)
}

func TestShardedPubSub(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	e := &shardedEnv{cluster: cluster, rdb: cluster.Client(t)}
	ctx := context.Background()

	t.Run("SlotMatchesClusterKeySlot", func(t *testing.T) {
		keys := []string{"", "a", "foo", "order:42", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
			"{", "}", "{}", "a{b", LockChannel("order:42"), LockChannel("x{y}z"), "redisson_sc:{sem}",
			"\xff\x00binary", "ключ"}
		for i := range 200 {
			keys = append(keys, fmt.Sprintf("k%d", i))
		}
		for _, k := range keys {
			want, err := e.rdb.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			assert.Equal(t, int(want), Slot(k), "slot of %q", k)
		}
	})

	t.Run("ThreeShards", func(t *testing.T) {
		ps := newSharded(t, e.rdb)
		channels := []string{e.channelOn(t, 0, "three"), e.channelOn(t, 1, "three"), e.channelOn(t, 2, "three")}
		require.NoError(t, ps.Subscribe(ctx, channels...))
		expectAll(t, ps, EventSubscribed, channels...)
		assert.Equal(t, 3, shardCount(ps), "one connection per master")
		for i, ch := range channels {
			for node := range 3 {
				want := int64(0)
				if node == i {
					want = 1
				}
				assert.Equal(t, want, e.subscribers(t, node, ch), "%s subscribed on its owner only", ch)
			}
		}

		want := map[string]string{}
		for i, ch := range channels {
			e.publish(t, ch, fmt.Sprint(i))
			want[ch] = fmt.Sprint(i)
		}
		assert.Equal(t, want, receiveMessages(t, ps, len(channels)), "shards deliver in any order")

		require.NoError(t, ps.Ping(ctx))
		for range 3 {
			ev, err := ps.Receive(ctx, eventWait)
			require.NoError(t, err)
			assert.Equal(t, EventPong, ev.Kind)
		}

		require.NoError(t, ps.Unsubscribe(ctx, channels[1]))
		expect(t, ps, EventUnsubscribed, channels[1])
		assert.Equal(t, 2, shardCount(ps), "a master with no channel left has no connection")
		assert.Zero(t, e.subscribers(t, 1, channels[1]))
		e.publish(t, channels[0], "still")
		assert.Equal(t, "still", expect(t, ps, EventMessage, channels[0]).Payload)

		require.NoError(t, ps.Unsubscribe(ctx, channels[0], channels[2]))
		expectAll(t, ps, EventUnsubscribed, channels[0], channels[2])
		assert.Zero(t, shardCount(ps))
	})

	t.Run("UnsubscribeThenSubscribeAgain", func(t *testing.T) {
		// The confirmation of the SUNSUBSCRIBE arrives when the channel is
		// wanted again: it must not be taken for Redis dropping it.
		ps := newSharded(t, e.rdb)
		ch := e.channelOn(t, 2, "again")
		require.NoError(t, ps.Subscribe(ctx, ch))
		expect(t, ps, EventSubscribed, ch)
		for range 3 {
			require.NoError(t, ps.Unsubscribe(ctx, ch))
			require.NoError(t, ps.Subscribe(ctx, ch))
		}
		for range 3 {
			expect(t, ps, EventSubscribed, ch)
		}
		assert.Equal(t, int64(1), e.subscribers(t, 2, ch))
		e.publish(t, ch, "again")
		assert.Equal(t, "again", expect(t, ps, EventMessage, ch).Payload)
		_, err := ps.Receive(ctx, 100*time.Millisecond)
		assert.True(t, IsTimeout(err), "nothing more: no resubscription loop (%v)", err)
	})

	t.Run("ReceiveTimeoutContextAndClose", func(t *testing.T) {
		ps := newSharded(t, e.rdb)
		start := time.Now()
		_, err := ps.Receive(ctx, 50*time.Millisecond)
		require.Error(t, err)
		assert.True(t, IsTimeout(err), "a timeout: %v", err)
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
		require.NoError(t, ps.Ping(ctx), "nothing to ping")

		ch := e.channelOn(t, 0, "timeout")
		require.NoError(t, ps.Subscribe(ctx, ch))
		expect(t, ps, EventSubscribed, ch)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = ps.Receive(cctx, time.Second)
		require.ErrorIs(t, err, context.Canceled)

		done := make(chan error, 1)
		go func() {
			_, err := ps.Receive(ctx, 0)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let Receive block; Close must end it either way
		require.NoError(t, ps.Close())
		select {
		case err := <-done:
			assert.True(t, IsClosed(err), "closed: %v", err)
		case <-time.After(eventWait):
			t.Fatal("Close did not end a blocked Receive")
		}
		assert.Error(t, ps.Subscribe(ctx, ch))
		_, err = ps.Receive(ctx, time.Second)
		assert.True(t, IsClosed(err))
		assert.Zero(t, e.subscribers(t, 0, ch), "Close closed the connection")
	})

	t.Run("ReconnectResubscribes", func(t *testing.T) {
		ps := newSharded(t, e.rdb)
		// Two channels in two slots of one master: go-redis resubscribes them
		// in one SSUBSCRIBE, which Redis refuses (CROSSSLOT).
		a := e.channelOn(t, 1, "reconnect-a")
		b := e.channelOn(t, 1, "reconnect-b")
		require.NotEqual(t, Slot(a), Slot(b))
		require.NoError(t, ps.Subscribe(ctx, a, b))
		expectAll(t, ps, EventSubscribed, a, b)

		node := e.cluster.Nodes()[1].Client(t)
		require.NoError(t, node.Do(ctx, "client", "kill", "type", "pubsub").Err())
		ev, err := ps.Receive(ctx, eventWait)
		require.Error(t, err, "the lost connection surfaces (got %+v)", ev)
		assert.False(t, IsTimeout(err) || IsClosed(err), "a connection error: %v", err)

		expectAll(t, ps, EventSubscribed, a, b)
		e.publish(t, a, "A")
		assert.Equal(t, "A", expect(t, ps, EventMessage, a).Payload)
		e.publish(t, b, "B")
		assert.Equal(t, "B", expect(t, ps, EventMessage, b).Payload)
	})

	t.Run("SlotMigration", func(t *testing.T) {
		ps := newSharded(t, e.rdb)
		moving := e.channelOn(t, 0, "migrate")
		sibling := sameSlot(t, moving)          // moves with it
		staying := e.channelOn(t, 0, "stay")    // same master, another slot
		elsewhere := e.channelOn(t, 2, "other") // another master
		require.NotEqual(t, Slot(moving), Slot(staying))
		all := []string{moving, sibling, staying, elsewhere}
		require.NoError(t, ps.Subscribe(ctx, all...))
		expectAll(t, ps, EventSubscribed, all...)
		// A key in the slot, so the migration moves data too.
		require.NoError(t, e.rdb.Set(ctx, "{"+moving+"}", "v", 0).Err())

		slot := Slot(moving)
		for _, to := range []int{1, 0} {
			e.cluster.MigrateSlot(t, slot, to)
			require.Equal(t, to, e.cluster.NodeForSlot(slot))
			// Redis drops the subscriptions of the slot's channels; the pub/sub
			// subscribes them on the new owner and says so.
			expectAll(t, ps, EventSubscribed, moving, sibling)
			assert.Equal(t, int64(1), e.subscribers(t, to, moving), "on the new owner")
			assert.Equal(t, int64(1), e.subscribers(t, to, sibling), "on the new owner")
			want := map[string]string{}
			for _, ch := range all {
				e.publish(t, ch, fmt.Sprint("after ", to))
				want[ch] = fmt.Sprint("after ", to)
			}
			assert.Equal(t, want, receiveMessages(t, ps, len(all)))
		}
		assert.Equal(t, "v", e.rdb.Get(ctx, "{"+moving+"}").Val(), "the key moved with the slot")

		require.NoError(t, ps.Unsubscribe(ctx, all...))
		expectAll(t, ps, EventUnsubscribed, all...)
		assert.Zero(t, shardCount(ps))
		for node := range 3 {
			for _, ch := range all {
				assert.Zero(t, e.subscribers(t, node, ch))
			}
		}
	})
}
