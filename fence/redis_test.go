package fence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/fence"
	"github.com/warden-go/warden/internal/holdertest"
	"github.com/warden-go/warden/internal/redistest"
)

// testCtx is a context that ends after a few seconds, cancelled when t
// finishes.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// stale checks that err is a *StaleTokenError for resource, token and
// highest.
func stale(t *testing.T, err error, resource string, token, highest int64) {
	t.Helper()
	require.ErrorIs(t, err, fence.ErrStaleToken)
	var se *fence.StaleTokenError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, fence.StaleTokenError{Resource: resource, Token: token, Highest: highest}, *se)
	assert.ErrorContains(t, err, fmt.Sprintf("resource %q: token %d, highest seen %d", resource, token, highest))
}

// Every write of the Redis guard refuses a token below the highest seen,
// writes nothing then, and accepts equal and higher tokens.
func TestRedisGuardRefusesStaleTokens(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	testGuardOps(t, rdb, "")
}

// testGuardOps runs the guard's operations on rdb, on keys with prefix
// (a hash tag, or none).
func testGuardOps(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	k := func(name string) string { return prefix + name }

	t.Run("set", func(t *testing.T) {
		require.NoError(t, g.Set(ctx, 5, k("s"), "five", 0))
		require.NoError(t, g.Set(ctx, 5, k("s"), "five again", 0), "an equal token")
		stale(t, g.Set(ctx, 4, k("s"), "four", 0), k("s"), 4, 5)
		assert.Equal(t, "five again", rdb.Get(ctx, k("s")).Val())
		assert.Equal(t, time.Duration(-1), rdb.TTL(ctx, k("s")).Val(), "ttl 0: no expiry")
		require.NoError(t, g.Set(ctx, 7, k("s"), 7, 10*time.Second))
		assert.Equal(t, "7", rdb.Get(ctx, k("s")).Val())
		assert.InDelta(t, 10*time.Second, rdb.PTTL(ctx, k("s")).Val(), float64(time.Second))
		require.NoError(t, g.Set(ctx, 7, k("s"), "kept", redis.KeepTTL))
		assert.Equal(t, "kept", rdb.Get(ctx, k("s")).Val())
		assert.InDelta(t, 10*time.Second, rdb.PTTL(ctx, k("s")).Val(), float64(time.Second), "redis.KeepTTL keeps the TTL")
		guard, err := fence.GuardKey(k("s"))
		require.NoError(t, err)
		assert.Equal(t, "7", rdb.Get(ctx, guard).Val())
		assert.Equal(t, time.Duration(-1), rdb.TTL(ctx, guard).Val(), "the guard has no TTL")
	})
	t.Run("del", func(t *testing.T) {
		require.NoError(t, g.Set(ctx, 3, k("d"), "x", 0))
		stale(t, g.Del(ctx, 2, k("d")), k("d"), 2, 3)
		assert.Equal(t, int64(1), rdb.Exists(ctx, k("d")).Val())
		require.NoError(t, g.Del(ctx, 3, k("d")))
		assert.Equal(t, int64(0), rdb.Exists(ctx, k("d")).Val())
		stale(t, g.Set(ctx, 2, k("d"), "stale after the delete", 0), k("d"), 2, 3)
		assert.Equal(t, int64(0), rdb.Exists(ctx, k("d")).Val(), "the guard outlives the key")
	})
	t.Run("hset", func(t *testing.T) {
		require.NoError(t, g.HSet(ctx, 10, k("h"), "a", 1, "b", "two"))
		require.NoError(t, g.HSet(ctx, 10, k("h"), map[string]any{"c": 3}))
		require.NoError(t, g.HSet(ctx, 11, k("h"), []string{"d", "4"}))
		stale(t, g.HSet(ctx, 9, k("h"), "a", "stale"), k("h"), 9, 11)
		assert.Equal(t, map[string]string{"a": "1", "b": "two", "c": "3", "d": "4"}, rdb.HGetAll(ctx, k("h")).Val())
		many := make([]any, 0, 3000)
		for i := range 1500 {
			many = append(many, "f"+strconv.Itoa(i), i)
		}
		require.NoError(t, g.HSet(ctx, 11, k("big"), many...), "more pairs than one unpack takes")
		assert.Equal(t, int64(1500), rdb.HLen(ctx, k("big")).Val())
	})
	t.Run("incr", func(t *testing.T) {
		n, err := g.IncrBy(ctx, 2, k("n"), 40)
		require.NoError(t, err)
		assert.Equal(t, int64(40), n)
		n, err = g.Incr(ctx, 2, k("n"))
		require.NoError(t, err)
		assert.Equal(t, int64(41), n)
		_, err = g.IncrBy(ctx, 1, k("n"), 1000)
		stale(t, err, k("n"), 1, 2)
		assert.Equal(t, "41", rdb.Get(ctx, k("n")).Val())
	})
	t.Run("eval", func(t *testing.T) {
		const script = `redis.call('RPUSH', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[2]);
			return {#KEYS, #ARGV, redis.call('LLEN', KEYS[1])}`
		keys := []string{k("log"), k("last")}
		if !strings.Contains(prefix, "{") {
			keys[1] = "{" + k("log") + "}-last" // the first key's slot, for a Cluster
		}
		v, err := g.Eval(ctx, 20, script, keys, "entry", "last")
		require.NoError(t, err)
		assert.Equal(t, []any{int64(2), int64(2), int64(1)}, v, "the script sees its own keys and args")
		_, err = g.Eval(ctx, 19, script, keys, "stale", "stale")
		stale(t, err, keys[0], 19, 20)
		assert.Equal(t, []string{"entry"}, rdb.LRange(ctx, keys[0], 0, -1).Val())
		_, err = g.Eval(ctx, 21, `return redis.call('GET', KEYS[1])`, []string{k("absent")})
		assert.ErrorIs(t, err, redis.Nil, "a nil reply is redis.Nil")
		v, err = g.Eval(ctx, 21, "#!lua\nreturn 'flagged'", []string{k("flags")})
		require.NoError(t, err)
		assert.Equal(t, "flagged", v)
		_, err = g.Eval(ctx, 21, `return redis.error_reply('MINE failed')`, []string{k("err")})
		assert.ErrorContains(t, err, "MINE failed", "the script's own error")
		assert.NotErrorIs(t, err, fence.ErrStaleToken)
	})
	t.Run("large tokens", func(t *testing.T) {
		// Beyond 2^53, where Lua's numbers lose integers.
		big := int64(math.MaxInt64 - 1)
		require.NoError(t, g.Set(ctx, big, k("big-token"), "x", 0))
		stale(t, g.Set(ctx, big-1, k("big-token"), "y", 0), k("big-token"), big-1, big)
		require.NoError(t, g.Set(ctx, big+1, k("big-token"), "z", 0))
		stale(t, g.Set(ctx, 9, k("big-token"), "short", 0), k("big-token"), 9, big+1)
	})
}

// A guard key that holds no token (no positive decimal int64) is an
// error, not a pass.
func TestRedisGuardKeyClobbered(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	guard, err := fence.GuardKey("clobbered")
	require.NoError(t, err)
	for _, v := range []string{"not a token", "0", "-3", "07", "12a", "9223372036854775808", "99999999999999999999"} {
		require.NoError(t, rdb.Set(ctx, guard, v, 0).Err())
		err = fence.NewRedis(rdb).Set(ctx, math.MaxInt64, "clobbered", "x", 0)
		require.ErrorContains(t, err, "holds no token", v)
		assert.NotErrorIs(t, err, fence.ErrStaleToken, v)
		assert.Equal(t, int64(0), rdb.Exists(ctx, "clobbered").Val(), v)
		assert.Equal(t, v, rdb.Get(ctx, guard).Val())
	}
}

// A write that fails in Redis (WRONGTYPE, an increment of no integer)
// writes nothing and leaves the guard as it was; Eval raises the guard
// before the caller's script, which may fail after its own writes.
func TestRedisGuardFailedWrite(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	guardOf := func(key string) string {
		guard, err := fence.GuardKey(key)
		require.NoError(t, err)
		return rdb.Get(ctx, guard).Val()
	}
	require.NoError(t, g.Set(ctx, 5, "str", "text", 0))
	_, err := g.IncrBy(ctx, 9, "str", 1)
	require.ErrorContains(t, err, "not an integer")
	require.ErrorContains(t, g.HSet(ctx, 9, "str", "f", "v"), "WRONGTYPE")
	assert.Equal(t, "5", guardOf("str"), "the failed writes raised nothing")
	assert.Equal(t, "text", rdb.Get(ctx, "str").Val())
	require.NoError(t, g.Set(ctx, 6, "str", "six", 0), "a token between the failed ones and the guard")

	require.NoError(t, g.HSet(ctx, 5, "h2", "f", "v"))
	_, err = g.IncrBy(ctx, 9, "h2", 1)
	require.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, "5", guardOf("h2"))

	_, err = g.Eval(ctx, 9, "redis.call('SET', KEYS[1], 'partial')\nreturn redis.error_reply('MINE failed')",
		[]string{"ev"})
	require.ErrorContains(t, err, "MINE failed")
	assert.Equal(t, "9", guardOf("ev"), "Eval raised the guard before the script")
	assert.Equal(t, "partial", rdb.Get(ctx, "ev").Val(), "Redis keeps a failed script's writes")
}

// The line numbers of an Eval script's errors are the script's own: the
// guard's part adds no line.
func TestRedisEvalErrorLines(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	for script, line := range map[string]int{
		"return redis.call('NOSUCHCOMMAND')":                              1,
		"local a = 1\nlocal b = 2\nreturn redis.call('NOSUCHCOMMAND')":    3,
		"#!lua\nreturn redis.call('NOSUCHCOMMAND')":                       2,
		"#!lua flags=allow-oom\n\nlocal x = nil\nreturn x.field":          4,
		"(function() return 1 end)()\nreturn redis.call('NOSUCHCOMMAND')": 2,
	} {
		_, err := g.Eval(ctx, 1, script, []string{"lines"})
		require.Error(t, err, script)
		assert.Regexp(t, fmt.Sprintf(`user_script:%d\b`, line), err.Error(), script)
	}
}

// Bad input is refused with ErrInvalidArgument before any write.
func TestRedisGuardBadInput(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	for name, err := range map[string]error{
		"zero token":      g.Set(ctx, 0, "k", "v", 0),
		"negative token":  g.Del(ctx, -1, "k"),
		"empty key":       g.HSet(ctx, 1, "", "f", "v"),
		"no guard slot":   g.Set(ctx, 1, "a}b", "v", 0),
		"negative ttl":    g.Set(ctx, 1, "k", "v", -time.Second),
		"-2ms ttl":        g.Set(ctx, 1, "k", "v", -2*time.Millisecond),
		"sub-ms ttl":      g.Set(ctx, 1, "k", "v", time.Microsecond),
		"fractional ttl":  g.Set(ctx, 1, "k", "v", 1500*time.Microsecond),
		"odd values":      g.HSet(ctx, 1, "k", "f"),
		"no values":       g.HSet(ctx, 1, "k"),
		"one value":       g.HSet(ctx, 1, "k", 42),
		"nil client":      fence.NewRedis(nil).Set(ctx, 1, "k", "v", 0),
		"nil guard":       (*fence.Redis)(nil).Del(ctx, 1, "k"),
		"nil ctx":         g.Set(noCtx, 1, "k", "v", 0),
		"no keys":         evalErr(g.Eval(ctx, 1, "return 1", nil)),
		"empty script":    evalErr(g.Eval(ctx, 1, " ", []string{"k"})),
		"no-writes flags": evalErr(g.Eval(ctx, 1, "#!lua flags=no-writes\nreturn 1", []string{"k"})),
		"shebang only":    evalErr(g.Eval(ctx, 1, "#!lua", []string{"k"})),
		"shebang, blank":  evalErr(g.Eval(ctx, 1, "#!lua flags=allow-oom\n \t\n", []string{"k"})),
		"incr zero token": evalErr(g.IncrBy(ctx, 0, "k", 1)),
		"empty tag":       g.Set(ctx, 1, "x{}y", "v", 0),
		"a guard key":     g.Set(ctx, 1, "warden:fence{k}", "v", 0),
		"a tagged guard":  g.Del(ctx, 1, "warden:fence:{u}:b"),
		"eval guard key":  evalErr(g.Eval(ctx, 1, "return 1", []string{"warden:fence{k}"})),
		"eval more guard": evalErr(g.Eval(ctx, 1, "return 1", []string{"{k}", "warden:fence:{k}"})),
		"nil *Client":     fence.NewRedis((*redis.Client)(nil)).Set(ctx, 1, "k", "v", 0),
		"nil *Cluster":    evalErr(fence.NewRedis((*redis.ClusterClient)(nil)).Incr(ctx, 1, "k")),
		"nil *Ring":       fence.NewRedis((*redis.Ring)(nil)).Del(ctx, 1, "k"),
	} {
		require.ErrorIs(t, err, fence.ErrInvalidArgument, name)
	}
	assert.ErrorContains(t, g.Set(ctx, 1, "k", "v", -time.Second), "redis.KeepTTL", "the one negative ttl taken")
	_, err := g.Eval(ctx, 1, "return 1", []string{""})
	assert.ErrorContains(t, err, "keys[0]", "Eval names the field keys[0]")
	_, err = g.Eval(ctx, 1, "return 1", []string{"{k}", "warden:fence:{k}"})
	assert.ErrorContains(t, err, "keys[1]")
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "nothing was written")
}

// A cancelled context writes nothing.
func TestRedisGuardCancelledContext(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	g := fence.NewRedis(rdb)
	require.ErrorIs(t, g.Set(ctx, 1, "k", "v", 0), context.Canceled)
	_, err := g.Eval(ctx, 1, "return redis.call('SET', KEYS[1], 'v')", []string{"k"})
	require.ErrorIs(t, err, context.Canceled)
	keys, err := rdb.Keys(testCtx(t), "*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "nothing was written")
}

// A resource key cannot be another key's guard: writing "through" a guard
// key would lower the guard and let a stale token in.
func TestRedisGuardKeyIsNoResource(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	for _, key := range []string{"bal", "{u}:b"} {
		guard, err := fence.GuardKey(key)
		require.NoError(t, err)
		require.NoError(t, g.Set(ctx, 10, key, "ten", 0))
		require.ErrorIs(t, g.Set(ctx, 1, guard, "1", 0), fence.ErrInvalidArgument, guard)
		_, err = g.IncrBy(ctx, 1, guard, -9)
		require.ErrorIs(t, err, fence.ErrInvalidArgument, guard)
		_, err = g.Eval(ctx, 11, `return redis.call('SET', KEYS[2], '1')`, []string{"{" + key + "}x", guard})
		require.ErrorIs(t, err, fence.ErrInvalidArgument, guard)
		assert.Equal(t, "10", rdb.Get(ctx, guard).Val(), "the guard of %s", key)
		stale(t, g.Set(ctx, 2, key, "stale", 0), key, 2, 10)
		assert.Equal(t, "ten", rdb.Get(ctx, key).Val())
	}
}

func evalErr[T any](_ T, err error) error { return err }

// On a 3-master Cluster every guard key is in its resource's slot: the
// operations run on keys with and without hash tags, in many slots.
func TestRedisGuardOnCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	rdb := cluster.Client(t)
	ctx := testCtx(t)
	t.Run("untagged", func(t *testing.T) { testGuardOps(t, rdb, "plain-") })
	t.Run("tagged", func(t *testing.T) { testGuardOps(t, rdb, "{tagged}-") })
	g := fence.NewRedis(rdb)
	nodes := map[int]bool{}
	for i := range 60 {
		for _, key := range []string{"key-" + strconv.Itoa(i), "{user:" + strconv.Itoa(i) + "}:balance", "a{b" + strconv.Itoa(i)} {
			require.NoError(t, g.Set(ctx, int64(i+2), key, i, 0), key)
			guard, err := fence.GuardKey(key)
			require.NoError(t, err)
			slot := rdb.ClusterKeySlot(ctx, key).Val()
			require.Equal(t, slot, rdb.ClusterKeySlot(ctx, guard).Val(), "key %s, guard %s", key, guard)
			require.Equal(t, int(slot), redisSlot(key))
			nodes[cluster.NodeForSlot(int(slot))] = true
			stale(t, g.Set(ctx, int64(i+1), key, "stale", 0), key, int64(i+1), int64(i+2))
		}
	}
	assert.Len(t, nodes, 3, "the keys span every master")
}

// pausedRedisWrite is the paused holder's write (in the child process):
// the job's result, with its token.
func pausedRedisWrite(ctx context.Context, token int64) error {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("FENCE_TEST_REDIS")})
	defer func() { _ = rdb.Close() }()
	g := fence.NewRedis(rdb)
	if err := g.HSet(ctx, token, "{job}:result", "by", "paused holder", "token", token); err != nil {
		return err
	}
	return g.Set(ctx, token, "{job}:status", "done by the paused holder", 0)
}

// A holder frozen (SIGSTOP) until its watchdog-renewed lease ran out,
// while the next holder takes the lock and writes, is refused when it
// wakes (SIGCONT) and writes: the next holder's work is all there. No
// step is timed: the paused holder writes when told, after the next
// holder's write.
func TestPausedHolderIsRefusedOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("FENCE_TEST_REDIS", srv.Addr())
	rdb := srv.Client(t)
	r := holdertest.Run(t, srv.Addr(), "job", watchdog, func(ctx context.Context, token int64) error {
		g := fence.NewRedis(rdb)
		if err := g.HSet(ctx, token, "{job}:result", "by", "next holder", "token", token, "rows", 3); err != nil {
			return err
		}
		return g.Set(ctx, token, "{job}:status", "done by the next holder", 0)
	})
	r.Log(t, "redis")
	assert.Greater(t, r.NextToken, r.PausedToken, "the next holder took the lock: the frozen holder's lease ran out")
	assert.False(t, r.StillHeld, "the resumed holder no longer holds the lock")
	assert.True(t, r.Wrote.After(r.Continued), "the stale write came after the resume")
	require.Equal(t, "stale", r.Outcome, "the paused holder's write: %s", r.Err)
	assert.Contains(t, r.Err, fmt.Sprintf("token %d, highest seen %d", r.PausedToken, r.NextToken))
	ctx := testCtx(t)
	assert.Equal(t, map[string]string{"by": "next holder", "token": strconv.FormatInt(r.NextToken, 10), "rows": "3"},
		rdb.HGetAll(ctx, "{job}:result").Val())
	assert.Equal(t, "done by the next holder", rdb.Get(ctx, "{job}:status").Val())
	t.Logf("redis: next holder's data afterwards: %v, status %q", rdb.HGetAll(ctx, "{job}:result").Val(),
		rdb.Get(ctx, "{job}:status").Val())
}

// Writers with interleaved tokens, all at once: the writes applied (the
// script appends its token to a log) never go down, the last is the
// highest token, and every refused one was below a token applied before.
func TestInterleavedWritersOnRedis(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{
		"single":  redistest.Start(t).Client(t),
		"cluster": redistest.StartCluster(t, 3).Client(t),
	} {
		t.Run(name, func(t *testing.T) { interleaved(t, rdb) })
	}
}

func interleaved(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	g := fence.NewRedis(rdb)
	const writers, rounds = 8, 25
	// Writer w writes tokens w+1, w+1+writers, ...: each its own in
	// order, all of them interleaved.
	tokens := make([][]int64, writers)
	for w := range writers {
		for r := range rounds {
			tokens[w] = append(tokens[w], int64(w+1+r*writers))
		}
	}
	total := writers * rounds
	const script = `redis.call('RPUSH', KEYS[1], ARGV[1]); return redis.call('SET', KEYS[2], ARGV[1])`
	keys := []string{"{acct}:log", "{acct}:value"}
	var mu sync.Mutex
	var refused []int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, tok := range tokens[w] {
				_, err := g.Eval(ctx, tok, script, keys, tok)
				if errors.Is(err, fence.ErrStaleToken) {
					mu.Lock()
					refused = append(refused, tok)
					mu.Unlock()
					continue
				}
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	logged, err := rdb.LRange(ctx, keys[0], 0, -1).Result()
	require.NoError(t, err)
	applied := make([]int64, len(logged))
	for i, s := range logged {
		applied[i], err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	assert.True(t, slices.IsSorted(applied), "the applied tokens never go down: %v", applied)
	assert.Equal(t, int64(total), slices.Max(applied), "the highest token was applied")
	assert.Equal(t, total, len(applied)+len(refused), "every write was applied or refused")
	assert.Equal(t, strconv.Itoa(total), rdb.Get(ctx, keys[1]).Val(), "the freshest survives")
	for _, tok := range refused {
		i, _ := slices.BinarySearch(applied, tok)
		assert.Less(t, i, len(applied), "refused %d, below no applied token", tok)
	}
	t.Logf("%d writes with interleaved tokens from %d writers: %d applied, in token order, %d refused",
		total, writers, len(applied), len(refused))
}

// watchdog is the paused holder's watchdog timeout: its lease runs out
// this long after it is frozen.
const watchdog = time.Second

// noCtx is a nil context, for the tests that pass one.
var noCtx context.Context

// An error of Eval's own script that looks like the guard's refusal is the
// script's error, not a stale token; the guard's refusal still is one.
func TestRedisEvalErrorLikeARefusalIsTheScripts(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	g := fence.NewRedis(rdb)
	_, err := g.Eval(ctx, 5, "return redis.error_reply('STALETOKEN 7')", []string{"res"})
	require.Error(t, err)
	require.NotErrorIs(t, err, fence.ErrStaleToken, "the script's own error")
	assert.ErrorContains(t, err, "STALETOKEN 7")

	_, err = g.Eval(ctx, 3, "return 1", []string{"res"})
	var stale *fence.StaleTokenError
	require.ErrorAs(t, err, &stale, "below the token 5 raised before the script ran")
	assert.Equal(t, fence.StaleTokenError{Resource: "res", Token: 3, Highest: 5}, *stale)
}
