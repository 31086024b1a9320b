package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// A group acquire or unlock repeated with its request ID (a retry after a
// lost reply) applies once; an undo reverses exactly the acquire it names.
func TestGroupAcquireAndUnlockAreIdempotentPerRequest(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		values := []string{"a", "b"}
		for range 3 {
			res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, values)
			require.NoError(t, err)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res, "the first result, again")
		}
		n, err := GroupHoldCount(ctx, rdb, "g", "o:1", values)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "applied once")
		res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r2", time.Minute, values)
		require.NoError(t, err)
		assert.Equal(t, 2, res.HoldCount, "a new request reenters")

		for range 3 {
			remaining, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u1", time.Minute, values)
			require.NoError(t, err)
			assert.True(t, held)
			assert.Equal(t, 1, remaining, "the first result, again")
		}
		undone, err := s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r1", values)
		require.NoError(t, err)
		assert.False(t, undone, "r1 is not the owner's last applied acquire")
		undone, err = s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r2", values)
		require.NoError(t, err)
		assert.True(t, undone, "r2 undone")
		assert.Zero(t, rdb.Exists(ctx, "g", AcquireLatchKey("g", "o:1")).Val(), "nothing held, no latch")
		undone, err = s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r2", values)
		require.NoError(t, err)
		assert.False(t, undone, "undone once")

		_, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u2", time.Minute, values)
		require.NoError(t, err)
		assert.False(t, held, "not held: ErrNotHeld")
	})
}

// An unlock naming a value the owner does not hold changes nothing (where
// Redisson counts down the values before it), and a refused acquire
// writes nothing.
func TestGroupScriptsChangeNothingWhenRefused(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, []string{"a", "b"})
		require.NoError(t, err)
		before := rdb.HGetAll(ctx, "g").Val()
		_, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u1", time.Minute, []string{"a", "c"})
		require.NoError(t, err)
		assert.False(t, held)
		res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:2", "r2", 5*time.Second, []string{"c", "b"})
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.InDelta(t, time.Minute.Milliseconds(), res.PTTL.Milliseconds(), 2000, "wait until b's hold ends")
		assert.Equal(t, before, rdb.HGetAll(ctx, "g").Val(), "nothing written")
	})
}

// Bad arguments are refused before any write.
func TestGroupScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	acq := func(args ...any) error {
		return groupAcquireScript.Run(ctx, rdb, []string{"g", AcquireLatchKey("g", "o")}, args...).Err()
	}
	for _, lease := range []string{"0", "-1", "1.5", "", "9007199254740993"} {
		require.Error(t, acq("o", lease, "r", "1000", "a"), "lease %q", lease)
	}
	require.Error(t, acq("", "1000", "r", "1000", "a"), "empty owner")
	require.Error(t, acq("o", "1000", "", "1000", "a"), "empty request id")
	require.Error(t, acq("o", "1000", "r", "1000"), "no values")
	require.Error(t, acq("o", "1000", "r", "1000", "a", ""), "an empty value")
	require.Error(t, acq("o", "1000", "r", "1000", "a:b"), "a value with ':'")
	require.Error(t, groupUnlockScript.Run(ctx, rdb, []string{"g", "c", "l", "a"}, "0", "1000", "o", "flushall", "1000", "a").Err())
	require.Error(t, groupRenewScript.Run(ctx, rdb, []string{"g"}, "0", "o", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "0", "o", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "1000", "", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "1000", "o").Err())
	require.Error(t, groupForceUnlockScript.Run(ctx, rdb, []string{"g", "c"}, "0", "del", "a").Err())
	assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")
}

// An extend sets each of the owner's values' holds to end lease from now,
// shorter or longer, and the hash to live as long as its longest hold; an
// owner that does not hold every value changes nothing.
func TestGroupExtend(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, []string{"a", "b"})
	require.NoError(t, err)
	require.True(t, res.Acquired)
	res, _, err = s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:2", "r2", 3*time.Second, []string{"c"})
	require.NoError(t, err)
	require.True(t, res.Acquired)

	before := rdb.HGetAll(ctx, "g").Val()
	ok, err := s.GroupExtend(ctx, rdb, "g", "o:2", []string{"a"}, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "o:2 does not hold a")
	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "c"}, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "o:1 does not hold c")
	assert.Equal(t, before, rdb.HGetAll(ctx, "g").Val(), "a refused extend writes nothing")

	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "b"}, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ttl := rdb.PTTL(ctx, "g").Val()
	assert.InDelta(t, (10 * time.Second).Milliseconds(), ttl.Milliseconds(), 1000, "cut to the longest hold, o:1's")
	for _, v := range []string{"a", "b"} {
		end, err := rdb.HGet(ctx, "g", v+":o:1:expire_time").Int64()
		require.NoError(t, err)
		assert.InDelta(t, time.Now().Add(10*time.Second).UnixMilli(), end, 1000, v)
	}
	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "b"}, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ttl = rdb.PTTL(ctx, "g").Val()
	assert.Greater(t, ttl, 2*time.Second, "o:2's longer hold keeps the hash")
}
