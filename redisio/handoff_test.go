package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A handoff releases the last hold and acquires for the next owner in one
// round trip; replayed, it answers the same; on a server without the
// scripts cached it loads them; a hold that is not the last stays.
func TestHandoff(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.Acquire(ctx, rdb, "h", "a", "a1", time.Minute)
		require.NoError(t, err)
		h := Handoff{Name: "h", From: "a", FromReqID: "u1", FromLease: time.Minute, To: "b", ToReqID: "b1", ToLease: time.Minute}
		res := s.Handoff(ctx, rdb, h)
		require.NoError(t, res.UnlockErr)
		require.NoError(t, res.AcquireErr)
		assert.Equal(t, HandoffResult{Remaining: 0, Held: true, Acquire: AcquireResult{Acquired: true, HoldCount: 1}}, res)
		assert.Equal(t, "1", rdb.HGet(ctx, "h", "b").Val())
		assert.False(t, rdb.HExists(ctx, "h", "a").Val())
		assert.Equal(t, res, s.Handoff(ctx, rdb, h), "a replay answers the first result")

		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		_, err = s.Acquire(ctx, rdb, "h", "b", "b2", time.Minute) // b holds twice
		require.NoError(t, err)
		res = s.Handoff(ctx, rdb, Handoff{Name: "h", From: "b", FromReqID: "u2", FromLease: time.Minute,
			To: "c", ToReqID: "c1", ToLease: time.Minute})
		require.NoError(t, res.UnlockErr)
		assert.Equal(t, 1, res.Remaining)
		assert.False(t, res.Acquire.Acquired, "b still holds: c is refused")
		assert.Positive(t, res.Acquire.PTTL)
	})
}
