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
// round trip, and its unlock publishes the unlock message, so other
// processes' waiters wake and compete; replayed, it answers the same; on a
// server without the scripts cached it loads them; a hold that is not the
// last stays, and nothing is published.
func TestHandoff(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := newFairSub(t, rdb, LockChannel("h"))
		_, err := s.lockAcquire(ctx, rdb, "h", "a", "a1", time.Minute)
		require.NoError(t, err)
		h := Handoff{Name: "h", From: "a", FromReqID: "u1", FromLease: time.Minute, To: "b", ToReqID: "b1", ToLease: time.Minute}
		res := s.Handoff(ctx, rdb, h)
		require.NoError(t, res.UnlockErr)
		require.NoError(t, res.AcquireErr)
		assert.Equal(t, HandoffResult{Remaining: 0, Held: true, Acquire: AcquireResult{Acquired: true, HoldCount: 1}}, res)
		assert.Equal(t, "1", rdb.HGet(ctx, "h", "b").Val())
		assert.False(t, rdb.HExists(ctx, "h", "a").Val())
		assert.Equal(t, res, s.Handoff(ctx, rdb, h), "a replay answers the first result")
		assert.Equal(t, []string{LockChannel("h") + "=" + UnlockMessage}, sub.messages(),
			"the handoff's unlock published once; its replay published nothing")

		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		_, err = s.lockAcquire(ctx, rdb, "h", "b", "b2", time.Minute) // b holds twice
		require.NoError(t, err)
		res = s.Handoff(ctx, rdb, Handoff{Name: "h", From: "b", FromReqID: "u2", FromLease: time.Minute,
			To: "c", ToReqID: "c1", ToLease: time.Minute})
		require.NoError(t, res.UnlockErr)
		assert.Equal(t, 1, res.Remaining)
		assert.False(t, res.Acquire.Acquired, "b still holds: c is refused")
		assert.Positive(t, res.Acquire.PTTL)
		assert.Empty(t, sub.messages(), "a hold that is not the last publishes nothing")
	})
}

// A fair handoff releases the last hold and acquires for the next owner in
// one round trip when that owner heads the queue; replayed, it answers the
// same; when another owner heads the queue, the next owner is refused and
// stays queued, and the head alone hears the unlock message.
func TestFairHandoff(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fh")
		require.True(t, f.acquire("a", "a1", fairNow, true).Acquired)
		require.False(t, f.acquire("b", "b1", fairNow, true).Acquired)
		h := FairHandoff{Name: "fh", From: "a", FromReqID: "u1", FromLease: fairLease, To: "b", ToReqID: "b2",
			ToLease: fairLease, Allowance: fairAllowance, Now: fairNow}
		res := f.s.FairHandoff(f.ctx, rdb, h)
		require.NoError(t, res.UnlockErr)
		require.NoError(t, res.AcquireErr)
		assert.Equal(t, HandoffResult{Remaining: 0, Held: true, Acquire: AcquireResult{Acquired: true, HoldCount: 1}}, res)
		assert.Equal(t, "1", rdb.HGet(f.ctx, "fh", "b").Val())
		assert.False(t, rdb.HExists(f.ctx, "fh", "a").Val())
		assert.Empty(t, f.queue(), "the head took the lock and left the queue")
		assert.Equal(t, res, f.s.FairHandoff(f.ctx, rdb, h), "a replay answers the first result")

		// c heads the queue, d is behind it: a handoff from b to d is
		// refused for d, which keeps its place; c hears the unlock.
		require.False(t, f.acquire("c", "c1", fairNow, true).Acquired)
		require.False(t, f.acquire("d", "d1", fairNow, true).Acquired)
		sub := newFairSub(t, rdb, FairChannel("fh", "c"), FairChannel("fh", "d"))
		require.NoError(t, rdb.ScriptFlush(f.ctx).Err())
		res = f.s.FairHandoff(f.ctx, rdb, FairHandoff{Name: "fh", From: "b", FromReqID: "u2", FromLease: fairLease,
			To: "d", ToReqID: "d2", ToLease: fairLease, Allowance: fairAllowance, Now: fairNow})
		require.NoError(t, res.UnlockErr)
		require.NoError(t, res.AcquireErr)
		assert.Zero(t, res.Remaining)
		assert.False(t, res.Acquire.Acquired, "d is not the queue's head")
		assert.Zero(t, rdb.Exists(f.ctx, "fh").Val(), "nobody holds")
		assert.Equal(t, []string{"c", "d"}, f.queue())
		assert.Equal(t, []string{FairChannel("fh", "c") + "=0"}, sub.messages(), "only the head hears it")
		require.True(t, f.acquire("c", "c2", fairNow, true).Acquired)
	})
}
