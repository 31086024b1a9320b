package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// semSub records what is published on some channels.
type semSub struct {
	t  *testing.T
	ps *redis.PubSub
}

// semSubscribe subscribes to channels and waits for the confirmations.
func semSubscribe(t *testing.T, rdb *redis.Client, channels ...string) *semSub {
	t.Helper()
	ctx := context.Background()
	ps := rdb.Subscribe(ctx, channels...)
	t.Cleanup(func() { _ = ps.Close() })
	for range channels {
		v, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err, "the subscription confirmed")
		require.IsType(t, &redis.Subscription{}, v)
	}
	return &semSub{t: t, ps: ps}
}

// next returns the next message as "channel payload".
func (s *semSub) next() string {
	s.t.Helper()
	v, err := s.ps.ReceiveTimeout(context.Background(), 2*time.Second)
	require.NoError(s.t, err, "expected a message")
	m, ok := v.(*redis.Message)
	require.True(s.t, ok, "got %T %v", v, v)
	return m.Channel + " " + m.Payload
}

// none asserts that nothing more was published.
func (s *semSub) none() {
	s.t.Helper()
	v, err := s.ps.ReceiveTimeout(context.Background(), 150*time.Millisecond)
	require.Error(s.t, err, "unexpected %v", v)
}

// semLatchTTL asserts that key is a latch with a TTL of at most LatchTTL.
func semLatchTTL(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	ttl := rdb.PTTL(context.Background(), key).Val()
	assert.Greater(t, ttl, time.Duration(0), "latch %s has a TTL", key)
	assert.LessOrEqual(t, ttl, LatchTTL)
}

func TestSemaphoreKeyNames(t *testing.T) {
	for _, tc := range []struct {
		name, channel, timeout, latchChannel, opLatch string
	}{
		{"sem", "redisson_sc:{sem}", "{sem}:timeout", "redisson_countdownlatch__channel__{sem}", "warden_latch:{sem}:r1"},
		{"a:b", "redisson_sc:{a:b}", "{a:b}:timeout", "redisson_countdownlatch__channel__{a:b}", "warden_latch:{a:b}:r1"},
		{"{t}:x", "redisson_sc:{t}:x", "{t}:x:timeout", "redisson_countdownlatch__channel__{{t}:x}", "warden_latch:{t}:x:r1"},
	} {
		assert.Equal(t, tc.channel, SemaphoreChannel(tc.name))
		assert.Equal(t, tc.timeout, PermitTimeoutKey(tc.name))
		assert.Equal(t, tc.latchChannel, LatchChannel(tc.name))
		assert.Equal(t, tc.opLatch, OpLatchKey(tc.name, "r1"))
		assert.Equal(t, Slot(tc.name), Slot(PermitTimeoutKey(tc.name)), "timeout ZSET in the name's slot")
		assert.Equal(t, Slot(tc.name), Slot(OpLatchKey(tc.name, "r1")), "latch in the name's slot")
		assert.Equal(t, Slot(tc.name), Slot(PermitsTotalKey(tc.name)), "total in the name's slot")
		assert.True(t, IsAuxiliaryKey(PermitsTotalKey(tc.name)), "the total is no name")
	}
	assert.Equal(t, "warden_permits_total:{sem}", PermitsTotalKey("sem"))
	assert.Equal(t, "warden_permits_total:{t}:x", PermitsTotalKey("{t}:x"))
	assert.Equal(t, "warden_latch:{sem}:permit:00ff", PermitSpentKey("sem", "00ff"))
	assert.Equal(t, "0", LatchZeroMessage)
	assert.Equal(t, "1", LatchNewCountMessage)
}

// TestSemaphoreBasics: REDISSON_BEHAVIOURS 50.
func TestSemaphoreBasics(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, SemaphoreChannel("sem"))

		ok, err := s.SemaphoreTrySetPermits(ctx, rdb, "sem", 10)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "redisson_sc:{sem} 10", sub.next())
		ok, err = s.SemaphoreTrySetPermits(ctx, rdb, "sem", 20)
		require.NoError(t, err)
		assert.False(t, ok, "trySetPermits only once")
		sub.none()

		acquired, avail, acks, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "sem", "a1", 1)
		require.NoError(t, err)
		assert.True(t, acquired)
		assert.Equal(t, int64(9), avail)
		assert.Zero(t, acks)
		semLatchTTL(t, rdb, OpLatchKey("sem", "a1"))

		n, err := s.SemaphoreRelease(ctx, rdb, "sem", "r1", 1)
		require.NoError(t, err)
		assert.Equal(t, int64(10), n)
		assert.Equal(t, "redisson_sc:{sem} 10", sub.next())

		acquired, avail, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "sem", "a2", 5)
		require.NoError(t, err)
		assert.True(t, acquired)
		assert.Equal(t, int64(5), avail)
		acquired, avail, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "sem", "a3", 6)
		require.NoError(t, err)
		assert.False(t, acquired)
		assert.Equal(t, int64(5), avail, "refused: the current count")
		assert.Zero(t, rdb.Exists(ctx, OpLatchKey("sem", "a3")).Val(), "a refused acquire writes nothing")

		got, err := SemaphoreAvailable(ctx, rdb, "sem")
		require.NoError(t, err)
		assert.Equal(t, int64(5), got)
		assert.Equal(t, "5", rdb.Get(ctx, "sem").Val(), "Redisson's layout: the name is a STRING count")
		sub.none()
	})
}

// TestSemaphoreWithoutInit: REDISSON_BEHAVIOURS 51.
func TestSemaphoreWithoutInit(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)

		got, err := SemaphoreAvailable(ctx, rdb, "fresh")
		require.NoError(t, err)
		assert.Zero(t, got)
		acquired, avail, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "fresh", "a0", 1)
		require.NoError(t, err)
		assert.False(t, acquired, "a missing semaphore has no permits")
		assert.Zero(t, avail)
		assert.Zero(t, rdb.DBSize(ctx).Val(), "nothing written")

		n, err := s.SemaphoreRelease(ctx, rdb, "fresh", "r1", 1)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "release on a fresh semaphore: 1 available")
		n, err = s.SemaphoreRelease(ctx, rdb, "fresh", "r2", 1)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
		acquired, avail, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "fresh", "a1", 2)
		require.NoError(t, err)
		assert.True(t, acquired)
		assert.Zero(t, avail)
	})
}

// setPermits sets a fresh semaphore name to permits with TrySetPermits.
func setPermits(t *testing.T, s *Scripts, rdb *redis.Client, name string, permits int64) {
	t.Helper()
	set, err := s.SemaphoreTrySetPermits(context.Background(), rdb, name, permits)
	require.NoError(t, err)
	require.True(t, set, "%s set to %d", name, permits)
}

// A release that makes a deleted semaphore anew deletes the total left of
// the old one (a Redisson delete takes only the semaphore's key); a
// release of a semaphore that exists keeps its total.
func TestSemaphoreReleaseAfterADeleteDropsTheOldTotal(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		setPermits(t, s, rdb, "jobs", 5)
		_, _, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "jobs", "a1", 2)
		require.NoError(t, err)
		n, err := s.SemaphoreRelease(ctx, rdb, "jobs", "r1", 1)
		require.NoError(t, err)
		assert.Equal(t, int64(4), n)
		assert.Equal(t, "5", rdb.Get(ctx, PermitsTotalKey("jobs")).Val(), "a release of a live semaphore keeps its total")

		require.NoError(t, rdb.Del(ctx, "jobs").Err()) // as Redisson's delete does
		n, err = s.SemaphoreRelease(ctx, rdb, "jobs", "r2", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "made anew with the released permits")
		assert.Zero(t, rdb.Exists(ctx, PermitsTotalKey("jobs")).Val(), "the old semaphore's total is gone")
		n, err = s.SemaphoreRelease(ctx, rdb, "jobs", "r2", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "a repeated request changes nothing")
	})
}

// TestSemaphoreNegativePermits: REDISSON_BEHAVIOURS 52.
func TestSemaphoreNegativePermits(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		setPermits(t, s, rdb, "neg", 10)
		acquired, _, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "neg", "a1", 10)
		require.NoError(t, err)
		require.True(t, acquired)

		sub := semSubscribe(t, rdb, SemaphoreChannel("neg"))
		n, err := s.SemaphoreAddPermits(ctx, rdb, "neg", "add-1", -5)
		require.NoError(t, err)
		assert.Equal(t, int64(-5), n)
		got, err := SemaphoreAvailable(ctx, rdb, "neg")
		require.NoError(t, err)
		assert.Equal(t, int64(-5), got)
		sub.none()

		n, err = s.SemaphoreRelease(ctx, rdb, "neg", "r1", 10)
		require.NoError(t, err)
		assert.Equal(t, int64(5), n)
		assert.Equal(t, "redisson_sc:{neg} 5", sub.next())

		n, err = s.SemaphoreAddPermits(ctx, rdb, "neg", "add-2", 3)
		require.NoError(t, err)
		assert.Equal(t, int64(8), n)
		assert.Equal(t, "redisson_sc:{neg} 8", sub.next(), "a positive count is published")
		semLatchTTL(t, rdb, OpLatchKey("neg", "add-2"))

		n, err = s.SemaphoreAddPermits(ctx, rdb, "fresh", "add-3", -2)
		require.NoError(t, err)
		assert.Equal(t, int64(-2), n, "adding to a missing semaphore starts at 0")
		sub.none()
	})
}

// TestSemaphoreDrain: REDISSON_BEHAVIOURS 54 (testDrainPermits).
func TestSemaphoreDrain(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, SemaphoreChannel("dr"))

		n, err := s.SemaphoreDrain(ctx, rdb, "dr")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, rdb.DBSize(ctx).Val(), "draining a missing semaphore writes nothing")

		require.NoError(t, rdb.Set(ctx, "dr", "7", 0).Err())
		n, err = s.SemaphoreDrain(ctx, rdb, "dr")
		require.NoError(t, err)
		assert.Equal(t, int64(7), n)
		assert.Equal(t, "0", rdb.Get(ctx, "dr").Val())
		n, err = s.SemaphoreDrain(ctx, rdb, "dr")
		require.NoError(t, err)
		assert.Zero(t, n)

		require.NoError(t, rdb.Set(ctx, "dr", "-3", 0).Err())
		n, err = s.SemaphoreDrain(ctx, rdb, "dr")
		require.NoError(t, err)
		assert.Equal(t, int64(-3), n, "a negative count is returned as it was (Redisson)")
		assert.Equal(t, "0", rdb.Get(ctx, "dr").Val())
		sub.none()

		require.NoError(t, rdb.Set(ctx, "bad", "x", 0).Err())
		_, err = s.SemaphoreDrain(ctx, rdb, "bad")
		require.Error(t, err)
		assert.Equal(t, "x", rdb.Get(ctx, "bad").Val())
	})
}

func TestSemaphoreExactlyOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.SemaphoreTrySetPermits(ctx, rdb, "once", 10)
		require.NoError(t, err)
		sub := semSubscribe(t, rdb, SemaphoreChannel("once"))

		acquired, avail, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "once", "a1", 3)
		require.NoError(t, err)
		assert.True(t, acquired)
		assert.Equal(t, int64(7), avail)
		_, err = s.SemaphoreRelease(ctx, rdb, "once", "r0", 1)
		require.NoError(t, err)
		assert.Equal(t, "redisson_sc:{once} 8", sub.next())
		acquired, avail, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "once", "a1", 3)
		require.NoError(t, err)
		assert.True(t, acquired)
		assert.Equal(t, int64(7), avail, "the same request again: its first result")
		assert.Equal(t, "8", rdb.Get(ctx, "once").Val(), "and nothing taken")

		n, err := s.SemaphoreRelease(ctx, rdb, "once", "r1", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(10), n)
		assert.Equal(t, "redisson_sc:{once} 10", sub.next())
		n, err = s.SemaphoreRelease(ctx, rdb, "once", "r1", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(10), n)
		assert.Equal(t, "10", rdb.Get(ctx, "once").Val(), "one release applied")
		semLatchTTL(t, rdb, OpLatchKey("once", "r1"))

		n, err = s.SemaphoreAddPermits(ctx, rdb, "once", "add", 5)
		require.NoError(t, err)
		assert.Equal(t, int64(15), n)
		assert.Equal(t, "redisson_sc:{once} 15", sub.next())
		n, err = s.SemaphoreAddPermits(ctx, rdb, "once", "add", 5)
		require.NoError(t, err)
		assert.Equal(t, int64(15), n)
		assert.Equal(t, "15", rdb.Get(ctx, "once").Val(), "one add applied")
		sub.none()

		_, err = s.SemaphoreRelease(ctx, rdb, "once", "a1", 1)
		require.ErrorContains(t, err, "request id already used")
		_, _, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "once", "r1", 1)
		require.ErrorContains(t, err, "request id already used")
		_, err = s.SemaphoreAddPermits(ctx, rdb, "once", "r1", 1)
		require.ErrorContains(t, err, "request id already used")
		assert.Equal(t, "15", rdb.Get(ctx, "once").Val(), "a reused request ID changes nothing")
	})
}

func TestSemaphoreLatchExpires(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, ff func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		n, err := s.SemaphoreRelease(ctx, rdb, "exp", "r1", 1)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.NoError(t, rdb.PExpire(ctx, OpLatchKey("exp", "r1"), 50*time.Millisecond).Err())
		ff(100 * time.Millisecond)
		assert.Zero(t, rdb.Exists(ctx, OpLatchKey("exp", "r1")).Val(), "latches expire")
	})
}

func TestSemaphoreUndoAcquire(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.SemaphoreTrySetPermits(ctx, rdb, "undo", 5)
		require.NoError(t, err)
		sub := semSubscribe(t, rdb, SemaphoreChannel("undo"))

		acquired, _, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "undo", "a1", 3)
		require.NoError(t, err)
		require.True(t, acquired)
		undone, err := s.SemaphoreUndoAcquire(ctx, rdb, "undo", "a1")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "5", rdb.Get(ctx, "undo").Val(), "permits given back")
		assert.Equal(t, "redisson_sc:{undo} 5", sub.next())
		undone, err = s.SemaphoreUndoAcquire(ctx, rdb, "undo", "a1")
		require.NoError(t, err)
		assert.False(t, undone, "undone once")
		acquired, avail, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "undo", "a1", 3)
		require.NoError(t, err)
		assert.False(t, acquired, "an undone request ID is spent")
		assert.Equal(t, int64(5), avail)
		assert.Equal(t, "5", rdb.Get(ctx, "undo").Val())

		undone, err = s.SemaphoreUndoAcquire(ctx, rdb, "undo", "never-ran")
		require.NoError(t, err)
		assert.False(t, undone)
		semLatchTTL(t, rdb, OpLatchKey("undo", "never-ran"))
		acquired, _, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "undo", "never-ran", 1)
		require.NoError(t, err)
		assert.False(t, acquired, "an acquire reaching Redis after its undo takes nothing")
		assert.Equal(t, "5", rdb.Get(ctx, "undo").Val())
		sub.none()

		_, err = s.SemaphoreRelease(ctx, rdb, "undo", "rel", 1)
		require.NoError(t, err)
		_, err = s.SemaphoreUndoAcquire(ctx, rdb, "undo", "rel")
		require.ErrorContains(t, err, "request id already used", "a release is not an acquire to undo")
	})
}

func TestSemaphoreRejectsBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		for _, p := range []int64{0, -1, 1<<53 + 1} {
			_, _, _, err := s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "bad", "a", p)
			require.Error(t, err, "acquire %d", p)
			_, err = s.SemaphoreRelease(ctx, rdb, "bad", "r", p)
			require.Error(t, err, "release %d", p)
		}
		_, err := s.SemaphoreTrySetPermits(ctx, rdb, "bad", -1)
		require.Error(t, err)
		_, err = s.SemaphoreAddPermits(ctx, rdb, "bad", "r", 1<<53+1)
		require.Error(t, err)

		for _, p := range []string{"", "1.5", "1e3", " 1", "abc", "-0", "9007199254740993"} {
			keys := []string{"bad", SemaphoreChannel("bad"), OpLatchKey("bad", "r")}
			require.Error(t, semAcquireScript.Run(ctx, rdb, []string{"bad", OpLatchKey("bad", "r")}, p, "1000").Err(), "acquire %q", p)
			require.Error(t, semReleaseScript.Run(ctx, rdb, keys, p, "publish", "1000").Err(), "release %q", p)
			require.Error(t, semAddPermitsScript.Run(ctx, rdb, keys, p, "publish", "1000").Err(), "add %q", p)
			require.Error(t, semTrySetPermitsScript.Run(ctx, rdb, keys[:2], p, "publish").Err(), "try set %q", p)
		}
		keys := []string{"bad", SemaphoreChannel("bad"), OpLatchKey("bad", "r")}
		require.Error(t, semReleaseScript.Run(ctx, rdb, keys, "1", "flushall", "1000").Err())
		require.Error(t, semReleaseScript.Run(ctx, rdb, keys, "1", "publish", "0").Err())
		require.Error(t, semAddPermitsScript.Run(ctx, rdb, keys, "1", "del", "1000").Err())
		require.Error(t, semTrySetPermitsScript.Run(ctx, rdb, keys[:2], "1", "set").Err())
		require.Error(t, semAcquireScript.Run(ctx, rdb, []string{"bad", OpLatchKey("bad", "r")}, "1", "0").Err())
		require.Error(t, semUndoAcquireScript.Run(ctx, rdb, []string{"bad", OpLatchKey("bad", "r"), SemaphoreChannel("bad")}, "del", "1000").Err())
		require.Error(t, semUndoAcquireScript.Run(ctx, rdb, []string{"bad", OpLatchKey("bad", "r"), SemaphoreChannel("bad")}, "publish", "-1").Err())
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		require.NoError(t, rdb.Set(ctx, "bad", "many", 0).Err())
		_, _, _, err = s.SemaphoreAcquire(ctx, rdb, ReplicaSync{}, "bad", "a", 1)
		require.Error(t, err, "a non-integer count")
		assert.Equal(t, int64(1), rdb.DBSize(ctx).Val(), "and no latch written")

		ok, err := s.SemaphoreTrySetPermits(ctx, rdb, "zero", 0)
		require.NoError(t, err, "0 permits is a valid semaphore")
		assert.True(t, ok)
	})
}
