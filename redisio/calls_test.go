package redisio

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// redisCalls is how many commands Redis executed since the last call (INFO
// commandstats; the calls a script makes count, and so does the script),
// by command, after which the stats are reset.
func redisCalls(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	ctx := context.Background()
	info, err := rdb.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	calls := map[string]int{}
	for line := range strings.SplitSeq(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" || name == "config|resetstat" {
			continue
		}
		field, _, _ := strings.Cut(stats, ",")
		n, err := strconv.Atoi(strings.TrimPrefix(field, "calls="))
		require.NoError(t, err, line)
		calls[name] = n
	}
	return calls
}

// The plain lock's scripts touch Redis as little as their exactly-once
// latches allow: the exact commands of each path are pinned here, so that
// a change that adds one shows.
func TestLockScriptsRedisCalls(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	require.NoError(t, s.Load(ctx, rdb))
	redisCalls(t, rdb)
	step := func(what string, want map[string]int, fn func()) {
		t.Helper()
		fn()
		assert.Equal(t, want, redisCalls(t, rdb), what)
	}

	step("first acquire", map[string]int{"evalsha": 1, "pttl": 1, "hincrby": 1, "pexpire": 1, "set": 1}, func() {
		r, err := s.Acquire(ctx, rdb, "calls", "o1", "a1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r)
	})
	step("the same acquire again", map[string]int{"evalsha": 1, "pttl": 1, "hget": 1, "get": 1}, func() {
		r, err := s.Acquire(ctx, rdb, "calls", "o1", "a1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r)
	})
	step("reentry", map[string]int{"evalsha": 1, "pttl": 1, "hget": 1, "get": 1, "hincrby": 1, "pexpire": 1, "set": 1}, func() {
		r, err := s.Acquire(ctx, rdb, "calls", "o1", "a2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, r)
	})
	step("refused", map[string]int{"evalsha": 1, "pttl": 1, "hget": 1}, func() {
		r, err := s.Acquire(ctx, rdb, "calls", "o2", "b1", time.Minute)
		require.NoError(t, err)
		assert.False(t, r.Acquired)
	})
	step("unlock, still held", map[string]int{"evalsha": 1, "hget": 1, "set": 1, "hincrby": 1, "pexpire": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{1, true}, []any{n, held})
	})
	step("the same unlock again", map[string]int{"evalsha": 1, "hget": 1, "set": 1, "get": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{1, true}, []any{n, held})
	})
	step("last unlock", map[string]int{"evalsha": 1, "hget": 1, "set": 1, "del": 1, "publish": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{0, true}, []any{n, held})
	})
	step("the last unlock again", map[string]int{"evalsha": 1, "hget": 1, "get": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{0, true}, []any{n, held})
	})
	step("unlock, not held", map[string]int{"evalsha": 1, "hget": 1, "get": 1}, func() {
		_, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u3", time.Minute)
		require.NoError(t, err)
		assert.False(t, held)
	})
}

// A reentry whose reply was lost, sent again, adds no second hold; the
// refused acquire of another owner leaves the holder's latch alone.
func TestRetriedReentryIsAppliedOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		for _, id := range []string{"a1", "a2", "a2"} {
			_, err := s.Acquire(ctx, rdb, "re", "o1", id, time.Minute)
			require.NoError(t, err)
		}
		r, err := s.Acquire(ctx, rdb, "re", "o2", "b1", time.Minute)
		require.NoError(t, err)
		assert.False(t, r.Acquired)
		assert.Equal(t, "2", rdb.HGet(ctx, "re", "o1").Val())
		assert.Equal(t, "a2", rdb.Get(ctx, AcquireLatchKey("re", "o1")).Val())
		assert.False(t, rdb.Exists(ctx, AcquireLatchKey("re", "o2")).Val() == 1, "a refused acquire writes no latch")
		undone, err := s.UndoAcquire(ctx, rdb, "re", "o1", "a2")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "1", rdb.HGet(ctx, "re", "o1").Val())
	})
}
