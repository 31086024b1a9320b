package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A first acquire takes the next token, a reentry and a replay of the same
// request read it without moving the counter, and an undone acquire leaves
// its token spent: tokens never repeat.
func TestFencedAcquireTokens(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		acquire := func(owner, reqID string) AcquireResult {
			t.Helper()
			res, _, err := s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("f"), owner, reqID, time.Minute, true, false)
			require.NoError(t, err)
			return res
		}
		first := acquire("a", "r1")
		require.True(t, first.Acquired)
		assert.Equal(t, int64(1), first.Token)
		assert.Equal(t, first, acquire("a", "r1"), "a replay answers its first result")
		re := acquire("a", "r2")
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2, Token: 1}, re, "a reentry keeps the token")
		refused := acquire("b", "r1")
		assert.False(t, refused.Acquired)
		assert.Zero(t, refused.Token)

		token, held, err := FencedToken(ctx, rdb, "f", "a")
		require.NoError(t, err)
		assert.True(t, held)
		assert.Equal(t, int64(1), token)
		_, held, err = FencedToken(ctx, rdb, "f", "b")
		require.NoError(t, err)
		assert.False(t, held)

		require.NoError(t, rdb.Del(ctx, "f").Err())
		b := acquire("b", "r2")
		assert.Equal(t, int64(2), b.Token)
		undone, err := s.UndoAcquire(ctx, rdb, "f", "b", "r2")
		require.NoError(t, err)
		require.True(t, undone)
		assert.Equal(t, int64(3), acquire("a", "r3").Token, "the undone acquire's token is not handed out again")
	})
}

// A token counter that is not a number fails the acquire before it writes.
func TestFencedAcquireRejectsABadCounter(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		require.NoError(t, rdb.Set(ctx, TokenKey("f"), "junk", 0).Err())
		s := newScripts(t)
		_, _, err := s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("f"), "a", "r1", time.Minute, true, false)
		require.ErrorContains(t, err, "not an integer")
		assert.Zero(t, rdb.Exists(ctx, "f", AcquireLatchKey("f", "a")).Val(), "nothing written")
	})
}

// RaiseToken sets a counter below the token given, creating it when
// missing, and leaves one at or above it.
func TestRaiseToken(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		key := TokenKey("f")
		v, err := RaiseToken(ctx, rdb, "f", 7)
		require.NoError(t, err)
		assert.Equal(t, int64(7), v)
		assert.Equal(t, "7", rdb.Get(ctx, key).Val(), "a missing counter is set")
		require.NoError(t, rdb.Set(ctx, key, 3, 0).Err())
		v, err = RaiseToken(ctx, rdb, "f", 7)
		require.NoError(t, err)
		assert.Equal(t, int64(7), v)
		assert.Equal(t, int64(8), rdb.Incr(ctx, key).Val(), "the next token is past the raised one")
		v, err = RaiseToken(ctx, rdb, "f", 5)
		require.NoError(t, err)
		assert.Equal(t, int64(8), v, "a higher counter is left")
		assert.Equal(t, "8", rdb.Get(ctx, key).Val())
		_, err = RaiseToken(ctx, rdb, "f", -1)
		require.NoError(t, err, "a negative token raises nothing")
		assert.Equal(t, "8", rdb.Get(ctx, key).Val())
	})
}
