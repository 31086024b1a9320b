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

	"github.com/warden-go/warden/internal/redisproc"
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
	for field, stats := range redisproc.InfoFields(info) {
		name, isCmd := strings.CutPrefix(field, "cmdstat_")
		if !isCmd || name == "info" || name == "config|resetstat" {
			continue
		}
		n, _, err := redisproc.CommandStat(stats)
		require.NoError(t, err, field)
		calls[name] = int(n)
	}
	return calls
}

// BenchmarkLuaCallCosts measures, on the machine's Redis, what the pieces
// of warden's scripts cost inside Redis: each sub-benchmark runs one EVAL
// whose Lua loop repeats the piece b.N times, so ns/op is the piece alone,
// without the round trip or the script call around it. It shows where a
// script's time goes: the argument checks and helper definitions every
// script starts with, against the calls it makes (on keys that exist).
func BenchmarkLuaCallCosts(b *testing.B) {
	rdb := redistest.Start(b).Client(b)
	ctx := context.Background()
	lib := luaFile("lib") + "\n" + luaFile("hold_lib") + "\n"
	for _, bc := range []struct{ name, setup, body string }{
		{"empty loop", "", ""},
		{"check ms", "", "ms(ARGV[1])"},
		{"check text", "", "text(ARGV[2])"},
		{"define a helper", "", "local function a(v) return v end"},
		{"PTTL", "redis.call('hset', KEYS[1], 'f', '1')", "redis.call('pttl', KEYS[1])"},
		{"HGET", "redis.call('hset', KEYS[1], 'f', '1')", "redis.call('hget', KEYS[1], 'f')"},
		{"HINCRBY", "", "redis.call('hincrby', KEYS[1], 'f', 1)"},
		{"PEXPIRE", "redis.call('hset', KEYS[1], 'f', '1')", "redis.call('pexpire', KEYS[1], ARGV[1])"},
		{"SET PX", "", "redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[1])"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := lib + bc.setup + "\nfor i = 1, tonumber(ARGV[3]) do " + bc.body + " end\nreturn 1"
			require.NoError(b, rdb.Del(ctx, "{bench}lock", "{bench}latch").Err())
			b.ResetTimer()
			err := rdb.Eval(ctx, src, []string{"{bench}lock", "{bench}latch"}, "30000", "owner:1", strconv.Itoa(b.N)).Err()
			b.StopTimer()
			require.NoError(b, err)
		})
	}
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

	step("first acquire", map[string]int{"evalsha": 1, "pttl": 1, "hset": 1, "pexpire": 1}, func() {
		r, err := s.lockAcquire(ctx, rdb, "calls", "o1", "a1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r)
	})
	assert.Equal(t, map[string]string{"o1": "1", AcquireRecordField("o1"): "a1"}, rdb.HGetAll(ctx, "calls").Val(),
		"the acquire record is in the lock's hash")
	assert.Equal(t, []string{"calls"}, rdb.Keys(ctx, "*").Val(), "and no other key")
	redisCalls(t, rdb)
	step("the same acquire again", map[string]int{"evalsha": 1, "pttl": 1, "hmget": 1}, func() {
		r, err := s.lockAcquire(ctx, rdb, "calls", "o1", "a1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r)
	})
	step("reentry", map[string]int{"evalsha": 1, "pttl": 1, "hmget": 1, "hset": 1, "pexpire": 1}, func() {
		r, err := s.lockAcquire(ctx, rdb, "calls", "o1", "a2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, r)
	})
	step("refused", map[string]int{"evalsha": 1, "pttl": 1, "hmget": 1}, func() {
		r, err := s.lockAcquire(ctx, rdb, "calls", "o2", "b1", time.Minute)
		require.NoError(t, err)
		assert.False(t, r.Acquired)
	})
	step("unlock, still held", map[string]int{"evalsha": 1, "get": 1, "hget": 1, "set": 1, "hincrby": 1, "pexpire": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{1, true}, []any{n, held})
	})
	step("the same unlock again", map[string]int{"evalsha": 1, "get": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u1", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{1, true}, []any{n, held})
	})
	step("last unlock", map[string]int{"evalsha": 1, "get": 1, "hget": 1, "set": 1, "del": 1, "publish": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{0, true}, []any{n, held})
	})
	step("the last unlock again", map[string]int{"evalsha": 1, "get": 1}, func() {
		n, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []any{0, true}, []any{n, held})
	})
	step("unlock, not held", map[string]int{"evalsha": 1, "get": 1, "hget": 1}, func() {
		_, held, err := s.Unlock(ctx, rdb, "calls", "o1", "u3", time.Minute)
		require.NoError(t, err)
		assert.False(t, held)
	})
	_, err := s.lockAcquire(ctx, rdb, "calls", "o1", "a3", time.Minute)
	require.NoError(t, err)
	redisCalls(t, rdb)
	step("undo the only hold", map[string]int{"evalsha": 1, "hmget": 1, "hincrby": 1, "hdel": 1, "exists": 1, "publish": 1}, func() {
		undone, err := s.UndoAcquire(ctx, rdb, "calls", "o1", "a3")
		require.NoError(t, err)
		assert.True(t, undone)
	})
	assert.Zero(t, rdb.Exists(ctx, "calls").Val(), "the undone hold's hash is gone, its record with it")
	redisCalls(t, rdb)
	step("a fenced first acquire", map[string]int{"evalsha": 1, "get": 1, "pttl": 1, "hset": 1, "pexpire": 1, "incr": 1}, func() {
		r, _, err := s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("calls"), "o1", "f1", time.Minute, true, false)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1, Token: 1}, r)
	})
}

// A reentry whose reply was lost, sent again, adds no second hold; the
// refused acquire of another owner leaves the holder's latch alone.
func TestRetriedReentryIsAppliedOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		for _, id := range []string{"a1", "a2", "a2"} {
			_, err := s.lockAcquire(ctx, rdb, "re", "o1", id, time.Minute)
			require.NoError(t, err)
		}
		r, err := s.lockAcquire(ctx, rdb, "re", "o2", "b1", time.Minute)
		require.NoError(t, err)
		assert.False(t, r.Acquired)
		assert.Equal(t, "2", rdb.HGet(ctx, "re", "o1").Val())
		assert.Equal(t, "a2", rdb.HGet(ctx, "re", AcquireRecordField("o1")).Val())
		assert.False(t, rdb.HExists(ctx, "re", AcquireRecordField("o2")).Val(), "a refused acquire writes no record")
		assert.Equal(t, int64(1), rdb.DBSize(ctx).Val(), "the lock's hash is the only key")
		undone, err := s.UndoAcquire(ctx, rdb, "re", "o1", "a2")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "1", rdb.HGet(ctx, "re", "o1").Val())
	})
}

// A key of another type under a registry record's name is no record: the
// other records are read all the same, and no error comes of it.
func TestReadClientRecordsSkipsAKeyOfAnotherType(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	require.NoError(t, rdb.HSet(ctx, ClientRegistryKey("good"), "service", "svc").Err())
	require.NoError(t, rdb.Set(ctx, ClientRegistryKey("string"), "x", 0).Err())
	require.NoError(t, rdb.RPush(ctx, ClientRegistryKey("list"), "x").Err())
	got, err := ReadClientRecords(ctx, rdb, []string{"string", "good", "list", "missing"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "svc", got["good"].Fields["service"])
}
