package redisio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatchCountDown: REDISSON_BEHAVIOURS 59 (countDown below 0, trySetCount
// once, a missing latch).
func TestLatchCountDown(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, LatchChannel("cd"))

		ok, err := s.LatchTrySetCount(ctx, rdb, "cd", 3)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "redisson_countdownlatch__channel__{cd} 1", sub.next(), "new count message")
		ok, err = s.LatchTrySetCount(ctx, rdb, "cd", 5)
		require.NoError(t, err)
		assert.False(t, ok, "trySetCount only once")
		assert.Equal(t, "3", rdb.Get(ctx, "cd").Val(), "Redisson's layout: the name is a STRING count")

		for i, want := range []int64{2, 1} {
			n, err := s.LatchCountDown(ctx, rdb, "cd", fmt.Sprintf("c%d", i))
			require.NoError(t, err)
			assert.Equal(t, want, n)
			got, err := LatchCount(ctx, rdb, "cd")
			require.NoError(t, err)
			assert.Equal(t, want, got)
		}
		sub.none()
		n, err := s.LatchCountDown(ctx, rdb, "cd", "c2")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "redisson_countdownlatch__channel__{cd} 0", sub.next(), "zero message at 0")
		assert.Zero(t, rdb.Exists(ctx, "cd").Val(), "deleted at 0")
		semLatchTTL(t, rdb, OpLatchKey("cd", "c2"))

		n, err = s.LatchCountDown(ctx, rdb, "cd", "c3")
		require.NoError(t, err)
		assert.Zero(t, n, "never below 0")
		assert.Zero(t, rdb.Exists(ctx, "cd", OpLatchKey("cd", "c3")).Val(), "a missing latch stays missing")
		got, err := LatchCount(ctx, rdb, "cd")
		require.NoError(t, err)
		assert.Zero(t, got)
		sub.none()

		ok, err = s.LatchTrySetCount(ctx, rdb, "cd", 1)
		require.NoError(t, err)
		assert.True(t, ok, "a latch that reached 0 can be set again")
		assert.Equal(t, "redisson_countdownlatch__channel__{cd} 1", sub.next())
	})
}

func TestLatchCountDownExactlyOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.LatchTrySetCount(ctx, rdb, "once", 2)
		require.NoError(t, err)
		sub := semSubscribe(t, rdb, LatchChannel("once"))

		n, err := s.LatchCountDown(ctx, rdb, "once", "c1")
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		n, err = s.LatchCountDown(ctx, rdb, "once", "c1")
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "the same request again: its first result")
		assert.Equal(t, "1", rdb.Get(ctx, "once").Val(), "one count down applied")

		n, err = s.LatchCountDown(ctx, rdb, "once", "c2")
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = s.LatchCountDown(ctx, rdb, "once", "c2")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "redisson_countdownlatch__channel__{once} 0", sub.next())
		sub.none()

		_, err = s.SemaphoreRelease(ctx, rdb, "once", "c1", 1)
		require.ErrorContains(t, err, "request id already used")
		assert.Zero(t, rdb.Exists(ctx, "once").Val())
	})
}

func TestLatchBelowZeroNeverPublishes(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		// A count at 0 or below is only left by a foreign writer.
		require.NoError(t, rdb.Set(ctx, "odd", "-4", 0).Err())
		got, err := LatchCount(ctx, rdb, "odd")
		require.NoError(t, err)
		assert.Zero(t, got, "never negative")
		sub := semSubscribe(t, rdb, LatchChannel("odd"))
		n, err := s.LatchCountDown(ctx, rdb, "odd", "c1")
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, rdb.Exists(ctx, "odd").Val(), "deleted below 0")
		sub.none()
	})
}

func TestLatchRejectsBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		for _, c := range []int64{0, -1, 1<<53 + 1} {
			_, err := s.LatchTrySetCount(ctx, rdb, "bad", c)
			require.Error(t, err, "count %d", c)
		}
		keys := []string{"bad", LatchChannel("bad")}
		for _, c := range []string{"", "1.5", "1e3", "x", "-0"} {
			require.Error(t, latchTrySetCountScript.Run(ctx, rdb, keys, c, "1", "publish").Err(), "count %q", c)
		}
		require.Error(t, latchTrySetCountScript.Run(ctx, rdb, keys, "1", "1", "flushall").Err())
		require.Error(t, latchTrySetCountScript.Run(ctx, rdb, keys, "1", "", "publish").Err())
		require.Error(t, latchCountDownScript.Run(ctx, rdb, append(keys, OpLatchKey("bad", "r")), "0", "del", "1000").Err())
		require.Error(t, latchCountDownScript.Run(ctx, rdb, append(keys, OpLatchKey("bad", "r")), "0", "publish", "0").Err())
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		require.NoError(t, rdb.Set(ctx, "bad", "x", 0).Err())
		_, err := s.LatchCountDown(ctx, rdb, "bad", "r")
		require.Error(t, err, "a non-integer count")
		assert.Equal(t, int64(1), rdb.DBSize(ctx).Val(), "and no latch written")
	})
}
