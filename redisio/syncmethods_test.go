package redisio

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SemaphoreTrySetPermitsTTL sets the count with its TTL and publishes it,
// as Redisson's trySetPermits(permits, timeToLive); SemaphoreSetPermits
// keeps the TTL and publishes a count above 0; SemaphoreReleaseIfExists
// gives only to an existing semaphore, exactly once per request ID.
func TestSemaphoreSetPermitsScripts(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, SemaphoreChannel("ttl"), SemaphoreChannel("set"), SemaphoreChannel("rif"))

		ok, err := s.SemaphoreTrySetPermitsTTL(ctx, rdb, "ttl", 4, 90*time.Second)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "redisson_sc:{ttl} 4", sub.next())
		pttl := rdb.PTTL(ctx, "ttl").Val()
		assert.Greater(t, pttl, 89*time.Second)
		assert.LessOrEqual(t, pttl, 90*time.Second)
		ok, err = s.SemaphoreTrySetPermitsTTL(ctx, rdb, "ttl", 5, time.Second)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, "4", rdb.Get(ctx, "ttl").Val())
		assert.Greater(t, rdb.PTTL(ctx, "ttl").Val(), 89*time.Second, "unchanged")

		before, err := s.SemaphoreSetPermits(ctx, rdb, "ttl", 9)
		require.NoError(t, err)
		assert.Equal(t, int64(4), before)
		assert.Equal(t, "redisson_sc:{ttl} 9", sub.next())
		assert.Greater(t, rdb.PTTL(ctx, "ttl").Val(), 88*time.Second, "SetPermits keeps the TTL")
		before, err = s.SemaphoreSetPermits(ctx, rdb, "set", 0)
		require.NoError(t, err)
		assert.Zero(t, before, "absent")
		assert.Equal(t, "0", rdb.Get(ctx, "set").Val(), "created")
		assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, "set").Val(), "without a TTL")
		require.NoError(t, rdb.Set(ctx, "set", "-3", 0).Err())
		before, err = s.SemaphoreSetPermits(ctx, rdb, "set", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(-3), before)
		assert.Equal(t, "redisson_sc:{set} 2", sub.next(), "0 was not published, 2 is")

		ok, n, err := s.SemaphoreReleaseIfExists(ctx, rdb, "rif", "r1", 2)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Zero(t, n)
		assert.Zero(t, rdb.Exists(ctx, "rif", OpLatchKey("rif", "r1")).Val(), "nothing written for a missing semaphore")
		require.NoError(t, rdb.Set(ctx, "rif", "1", 0).Err())
		ok, n, err = s.SemaphoreReleaseIfExists(ctx, rdb, "rif", "r2", 2)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(3), n)
		assert.Equal(t, "redisson_sc:{rif} 3", sub.next())
		semLatchTTL(t, rdb, OpLatchKey("rif", "r2"))
		ok, n, err = s.SemaphoreReleaseIfExists(ctx, rdb, "rif", "r2", 2)
		require.NoError(t, err)
		assert.True(t, ok, "a retry returns the first result")
		assert.Equal(t, int64(3), n)
		assert.Equal(t, "3", rdb.Get(ctx, "rif").Val(), "and gives nothing more")
		_, err = s.SemaphoreRelease(ctx, rdb, "rif", "r2", 1)
		require.ErrorContains(t, err, "request id already used", "the latch is kept per kind of operation")
		sub.none()
	})
}

func TestSemaphoreNewScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		keys := []string{"bad", SemaphoreChannel("bad"), OpLatchKey("bad", "r")}
		for _, p := range []string{"", "-1", "1.5", "1e3", " 1", "-0", "9007199254740993"} {
			require.Error(t, semSetPermitsScript.Run(ctx, rdb, keys[:2], p, "publish").Err(), "set %q", p)
			require.Error(t, semReleaseIfExists.Run(ctx, rdb, keys, p, "publish", "1000").Err(), "release if exists %q", p)
		}
		require.Error(t, semReleaseIfExists.Run(ctx, rdb, keys, "0", "publish", "1000").Err(), "0 permits")
		for _, ttl := range []string{"-1", "1.5", "", "x", "9007199254740993"} {
			require.Error(t, semTrySetPermitsScript.Run(ctx, rdb, keys[:2], "1", "publish", ttl).Err(), "ttl %q", ttl)
		}
		require.Error(t, semSetPermitsScript.Run(ctx, rdb, keys[:2], "1", "del").Err())
		require.Error(t, semReleaseIfExists.Run(ctx, rdb, keys, "1", "flushall", "1000").Err())
		require.Error(t, semReleaseIfExists.Run(ctx, rdb, keys, "1", "publish", "0").Err())
		_, err := s.SemaphoreTrySetPermitsTTL(ctx, rdb, "bad", 1, -time.Second)
		require.Error(t, err)
		for _, op := range [][]any{{"pexpire", "0"}, {"pexpire", "-5"}, {"pexpireat", "1.5"}, {"pexpire"}, {"del", "1000"}, {"expire", "10"}} {
			require.Error(t, expireScript.Run(ctx, rdb, []string{"bad"}, op...).Err(), "expire %v", op)
		}
		_, err = Expire(ctx, rdb, []string{"bad"}, 0)
		require.Error(t, err)
		_, err = ExpireAt(ctx, rdb, []string{"bad"}, time.Time{})
		require.Error(t, err)
		require.Error(t, latchDeleteScript.Run(ctx, rdb, []string{"bad", LatchChannel("bad")}, "", "publish").Err())
		require.Error(t, latchDeleteScript.Run(ctx, rdb, []string{"bad", LatchChannel("bad")}, "0", "del").Err())
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		require.NoError(t, rdb.Set(ctx, "bad", "many", 0).Err())
		require.Error(t, semSetPermitsScript.Run(ctx, rdb, keys[:2], "1", "publish").Err(), "a non-integer count")
		_, _, err = s.SemaphoreReleaseIfExists(ctx, rdb, "bad", "r", 1)
		require.Error(t, err, "a non-integer count")
		assert.Equal(t, "many", rdb.Get(ctx, "bad").Val())
		assert.Equal(t, int64(1), rdb.DBSize(ctx).Val(), "and no latch written")
		ok, err := latchDeleteScript.Run(ctx, rdb, []string{"absent", LatchChannel("absent")}, "0", "publish").Bool()
		require.NoError(t, err)
		assert.False(t, ok)
	})
}

// The expiry script sets, or clears, the expiry of every key it is given,
// and reports whether any key changed, as Redisson's multi-key expire.
func TestExpireEveryKeyOfAnObject(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		keys := PermitKeys("obj")
		ok, err := Expire(ctx, rdb, keys, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "no key")
		require.NoError(t, rdb.Set(ctx, "obj", "1", 0).Err())
		ok, err = Expire(ctx, rdb, keys, time.Minute)
		require.NoError(t, err)
		assert.True(t, ok, "one key of two")
		require.NoError(t, rdb.ZAdd(ctx, keys[1], redis.Z{Score: 1, Member: "m"}).Err())
		ok, err = ExpireAt(ctx, rdb, keys, time.Now().Add(time.Hour))
		require.NoError(t, err)
		assert.True(t, ok)
		for _, k := range keys {
			assert.Greater(t, rdb.PTTL(ctx, k).Val(), 59*time.Minute, k)
		}
		ok, err = ClearExpire(ctx, rdb, keys)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = ClearExpire(ctx, rdb, keys)
		require.NoError(t, err)
		assert.False(t, ok, "nothing left to clear")
		for _, k := range keys {
			assert.Equal(t, time.Duration(-1), rdb.PTTL(ctx, k).Val(), k)
		}
		ok, err = Delete(ctx, rdb, keys...)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, rdb.DBSize(ctx).Val())
	})
}

// PermitSetPermits, PermitCounts, PermitLeaseTime and PermitReleaseMany on
// Redisson's layout, with their messages.
func TestPermitNewScripts(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		const name = "pn"
		sub := semSubscribe(t, rdb, SemaphoreChannel(name))
		n, err := s.PermitSetPermits(ctx, rdb, name, 3, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(3), n)
		assert.Equal(t, "redisson_sc:{pn} 3", sub.next())
		n, err = s.PermitSetPermits(ctx, rdb, name, 3, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(3), n)
		sub.none() // unchanged: nothing published

		a, b, c := NewPermitID(), NewPermitID(), NewPermitID()
		require.True(t, permitAcquire(t, s, rdb, name, a, time.Second, permitT0).Acquired)
		require.True(t, permitAcquire(t, s, rdb, name, b, 0, permitT0).Acquired)
		require.True(t, permitAcquire(t, s, rdb, name, c, time.Hour, permitT0).Acquired)
		counts, err := s.PermitCounts(ctx, rdb, name, permitT0)
		require.NoError(t, err)
		assert.Equal(t, PermitCounts{Exists: true, Available: 0, Held: 3}, counts)

		left, held, err := s.PermitLeaseTime(ctx, rdb, name, a, permitT0.Add(400*time.Millisecond))
		require.NoError(t, err)
		assert.True(t, held)
		assert.Equal(t, 600*time.Millisecond, left)
		left, held, err = s.PermitLeaseTime(ctx, rdb, name, b, permitT0)
		require.NoError(t, err)
		assert.True(t, held)
		assert.Equal(t, time.Duration(-1), left, "never expires")

		// At t0+1s a's lease ended: the next script reclaims it.
		later := permitT0.Add(time.Second)
		_, held, err = s.PermitLeaseTime(ctx, rdb, name, a, later)
		require.NoError(t, err)
		assert.False(t, held, "expired")
		assert.Equal(t, "redisson_sc:{pn} 1", sub.next(), "the reclaim published")

		n2, err := s.PermitReleaseMany(ctx, rdb, name, "m1", []string{b, a}, later)
		require.NoError(t, err)
		assert.Zero(t, n2, "a is not held: none released")
		assert.Equal(t, float64(permitNoExpiry), permitScore(t, rdb, name, b), "b still held")
		assert.Equal(t, int64(1), rdb.Exists(ctx, PermitSpentKey(name, b)).Val(), "spent markers written")

		n2, err = s.PermitReleaseMany(ctx, rdb, name, "m2", []string{b, c}, later)
		require.NoError(t, err)
		assert.Equal(t, 2, n2)
		assert.Equal(t, "redisson_sc:{pn} 3", sub.next(), "the new count")
		semLatchTTL(t, rdb, OpLatchKey(name, "m2"))
		n2, err = s.PermitReleaseMany(ctx, rdb, name, "m2", []string{b, c}, later)
		require.NoError(t, err)
		assert.Equal(t, 2, n2, "a retry returns the first result")
		assert.Equal(t, "3", rdb.Get(ctx, name).Val(), "and releases nothing more")

		d := NewPermitID()
		require.True(t, permitAcquire(t, s, rdb, name, d, 0, later).Acquired)
		n, err = s.PermitSetPermits(ctx, rdb, name, 0, later)
		require.NoError(t, err)
		assert.Equal(t, int64(-1), n, "one held, none allowed")
		counts, err = s.PermitCounts(ctx, rdb, name, later)
		require.NoError(t, err)
		assert.Equal(t, PermitCounts{Exists: true, Available: -1, Held: 1}, counts)
		n, err = s.PermitSetPermits(ctx, rdb, name, 4, later)
		require.NoError(t, err)
		assert.Equal(t, int64(3), n)
		assert.Equal(t, "redisson_sc:{pn} 3", sub.next(), "the available count, not the total")
		sub.none()
	})
}

func TestPermitNewScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		good := NewPermitID()
		member, err := permitMember(good)
		require.NoError(t, err)
		base := []string{"bad", PermitTimeoutKey("bad"), SemaphoreChannel("bad")}
		for _, id := range []string{"1234", "", strings.ToUpper(good)} {
			_, _, err = s.PermitLeaseTime(ctx, rdb, "bad", id, permitT0)
			require.Error(t, err, "lease time %q", id)
			_, err = s.PermitReleaseMany(ctx, rdb, "bad", "r", []string{good, id}, permitT0)
			require.Error(t, err, "release many %q", id)
		}
		_, err = s.PermitReleaseMany(ctx, rdb, "bad", "r", nil, permitT0)
		require.Error(t, err, "no ids")

		many := func(ids ...string) []string {
			keys := append(base[:3:3], OpLatchKey("bad", "r"))
			for range ids {
				keys = append(keys, PermitSpentKey("bad", good))
			}
			return keys
		}
		manyArgs := func(ids ...string) []any {
			args := []any{"1000", "publish", "1000"}
			for _, id := range ids {
				args = append(args, id)
			}
			return args
		}
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member, member), manyArgs(member, member)...).Err(), "duplicate")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(), manyArgs()...).Err(), "no ids")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member), manyArgs(member, "x")...).Err(), "short id, keys miscounted")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member, "x"), manyArgs(member, "x")...).Err(), "short id")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member), "0", "publish", "1000", member).Err(), "now")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member), "1000", "del", "1000", member).Err(), "publish")
		require.Error(t, permitReleaseManyScript.Run(ctx, rdb, many(member), "1000", "publish", "0", member).Err(), "latch ttl")
		for _, p := range []string{"-1", "1.5", "", "x", "-0"} {
			require.Error(t, permitSetPermitsScript.Run(ctx, rdb, base, p, "1000", "publish").Err(), "set %q", p)
		}
		for _, now := range []string{"0", "-5", "x"} {
			require.Error(t, permitSetPermitsScript.Run(ctx, rdb, base, "1", now, "publish").Err(), "now %q", now)
			require.Error(t, permitCountsScript.Run(ctx, rdb, base, now, "publish").Err(), "now %q", now)
			require.Error(t, permitLeaseTimeScript.Run(ctx, rdb, base, member, now, "publish").Err(), "now %q", now)
		}
		require.Error(t, permitLeaseTimeScript.Run(ctx, rdb, base, good, "1000", "publish").Err(), "hex, not raw bytes")
		require.Error(t, permitCountsScript.Run(ctx, rdb, base, "1000", "set").Err())
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		require.NoError(t, rdb.Set(ctx, "bad", "007", 0).Err())
		require.NoError(t, rdb.ZAdd(ctx, PermitTimeoutKey("bad"), redis.Z{Score: 1, Member: member}).Err())
		_, err = s.PermitSetPermits(ctx, rdb, "bad", 1, permitT0)
		require.Error(t, err, "a non-integer count")
		_, err = s.PermitCounts(ctx, rdb, "bad", permitT0)
		require.Error(t, err)
		_, err = s.PermitReleaseMany(ctx, rdb, "bad", "r", []string{good}, permitT0)
		require.Error(t, err)
		assert.Equal(t, int64(1), rdb.ZCard(ctx, PermitTimeoutKey("bad")).Val(), "nothing reclaimed half way")
		assert.Equal(t, int64(2), rdb.DBSize(ctx).Val(), "no latch or marker written")
	})
}

// PermitAcquireMany takes one permit per ID, all or none, idempotent by
// the IDs; PermitUndoAcquireMany gives back the held ones and spends all.
func TestPermitAcquireMany(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		const name = "pm"
		sub := semSubscribe(t, rdb, SemaphoreChannel(name))
		ok, err := s.PermitTrySetPermits(ctx, rdb, name, 3, permitT0)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "redisson_sc:{pm} 3", sub.next())

		ids := []string{NewPermitID(), NewPermitID()}
		res, acks, err := s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, ids, time.Minute, permitT0)
		require.NoError(t, err)
		assert.Zero(t, acks)
		assert.Equal(t, PermitResult{Acquired: true, PermitID: ids[0], PermitIDs: ids, Available: 1}, res)
		for _, id := range ids {
			assert.Equal(t, float64(permitT0.Add(time.Minute).UnixMilli()), permitScore(t, rdb, name, id), "each with the lease")
		}
		res, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, ids, time.Minute, permitT0)
		require.NoError(t, err)
		assert.True(t, res.Acquired, "a retry: already held")
		assert.Equal(t, "1", rdb.Get(ctx, name).Val(), "and takes nothing more")

		more := []string{NewPermitID(), NewPermitID()}
		res, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, more, 0, permitT0)
		require.NoError(t, err)
		assert.False(t, res.Acquired, "1 available, 2 asked")
		assert.Equal(t, int64(1), res.Available)
		assert.Equal(t, time.Minute, res.NextExpiry, "the nearest lease end")
		assert.Equal(t, float64(-1), permitScore(t, rdb, name, more[0]), "none taken")

		_, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, []string{ids[0], more[0]}, 0, permitT0)
		require.ErrorContains(t, err, "partly held")
		_, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, []string{more[0], more[0]}, 0, permitT0)
		require.ErrorContains(t, err, "duplicate")
		_, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, nil, 0, permitT0)
		require.Error(t, err)

		undone, err := s.PermitUndoAcquireMany(ctx, rdb, name, ids, permitT0)
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "redisson_sc:{pm} 3", sub.next())
		assert.Zero(t, rdb.Exists(ctx, PermitTimeoutKey(name)).Val(), "both given back")
		for _, id := range ids {
			assert.Equal(t, int64(1), rdb.Exists(ctx, PermitSpentKey(name, id)).Val(), "spent")
		}
		_, _, err = s.PermitAcquireMany(ctx, rdb, ReplicaSync{}, name, ids, 0, permitT0)
		require.ErrorContains(t, err, "spent", "a late retry of the undone acquire takes nothing")
		assert.Equal(t, "3", rdb.Get(ctx, name).Val())
		undone, err = s.PermitUndoAcquireMany(ctx, rdb, name, more, permitT0)
		require.NoError(t, err)
		assert.False(t, undone, "never taken")
		sub.none()
	})
}

// FuzzTrySetPermitsTTL runs the semaphore's trySetPermits script with
// arbitrary TTL strings: it either refuses before writing, or sets the
// semaphore and its total with exactly that TTL (none for "0").
func FuzzTrySetPermitsTTL(f *testing.F) {
	m := miniredis.NewMiniRedis()
	require.NoError(f, m.Start())
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	for _, seed := range []string{"0", "1", "1000", "-5", "1.5", "1e3", "9007199254740992", "9007199254740993", "", " 1", "01"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ttl string) {
		ctx := context.Background()
		m.FlushAll()
		n, err := semTrySetPermitsScript.Run(ctx, rdb, []string{"s", SemaphoreChannel("s"), PermitsTotalKey("s")}, "3", "publish", ttl).Int64()
		if err != nil {
			if len(m.Keys()) > 0 {
				t.Fatalf("ttl %q: refused but wrote", ttl)
			}
			return
		}
		want, perr := strconv.ParseInt(ttl, 10, 64)
		if perr != nil || want < 0 || strconv.FormatInt(want, 10) != ttl || n != 1 {
			t.Fatalf("ttl %q accepted (reply %d)", ttl, n)
		}
		if want > math.MaxInt64/int64(time.Millisecond) {
			return // beyond time.Duration: miniredis cannot show this TTL
		}
		if got := m.TTL("s"); got != time.Duration(want)*time.Millisecond {
			t.Fatalf("ttl %q: the semaphore's TTL is %v", ttl, got)
		}
		if got := m.TTL(PermitsTotalKey("s")); got != time.Duration(want)*time.Millisecond {
			t.Fatalf("ttl %q: the total's TTL is %v", ttl, got)
		}
	})
}
