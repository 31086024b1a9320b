package redisio

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// permitT0 is the test clock's start; scripts get time only as arguments.
var permitT0 = time.UnixMilli(1_700_000_000_000)

// permitScore is the lease end stored for id, or -1 when id is not held.
func permitScore(t *testing.T, rdb *redis.Client, name, id string) float64 {
	t.Helper()
	b, err := hex.DecodeString(id)
	require.NoError(t, err)
	v, err := rdb.ZScore(context.Background(), PermitTimeoutKey(name), string(b)).Result()
	if errors.Is(err, redis.Nil) {
		return -1
	}
	require.NoError(t, err)
	return v
}

func permitAcquire(t *testing.T, s *Scripts, rdb *redis.Client, name, id string, lease time.Duration, now time.Time) PermitResult {
	t.Helper()
	res, acks, err := s.PermitAcquire(context.Background(), rdb, ReplicaSync{}, name, id, lease, now)
	require.NoError(t, err)
	assert.Zero(t, acks)
	return res
}

func TestPermitIDs(t *testing.T) {
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 100 {
		id := NewPermitID()
		assert.Regexp(t, hexID, id)
		assert.True(t, ValidPermitID(id))
		assert.False(t, seen[id], "fresh IDs differ")
		seen[id] = true
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"0123456789abcdef0123456789abcdef", true},
		{"0123456789ABCDEF0123456789abcdef", false},
		{"1234", false},
		{"", false},
		{"0123456789abcdef0123456789abcdeg", false},
		{"0123456789abcdef0123456789abcdef0", false},
		{"0123456789abcdef 123456789abcdef", false},
	} {
		assert.Equal(t, tc.ok, ValidPermitID(tc.id), tc.id)
	}
}

// TestPermitAcquireRelease: REDISSON_BEHAVIOURS 56-57, on Redisson's layout.
func TestPermitAcquireRelease(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, SemaphoreChannel("pes"))
		ok, err := s.PermitTrySetPermits(ctx, rdb, "pes", 2, permitT0)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "redisson_sc:{pes} 2", sub.next())
		ok, err = s.PermitTrySetPermits(ctx, rdb, "pes", 5, permitT0)
		require.NoError(t, err)
		assert.False(t, ok, "trySetPermits only once")

		id1, id2, id3 := NewPermitID(), NewPermitID(), NewPermitID()
		r := permitAcquire(t, s, rdb, "pes", id1, 0, permitT0)
		assert.Equal(t, PermitResult{Acquired: true, PermitID: id1, Available: 1}, r)
		assert.Equal(t, float64(permitNoExpiry), permitScore(t, rdb, "pes", id1), "no lease: Redisson's never-expires score")
		r = permitAcquire(t, s, rdb, "pes", id1, 0, permitT0)
		assert.Equal(t, PermitResult{Acquired: true, PermitID: id1, Available: 1}, r, "the same ID again takes nothing")

		r = permitAcquire(t, s, rdb, "pes", id2, 10*time.Second, permitT0)
		assert.Equal(t, PermitResult{Acquired: true, PermitID: id2, Available: 0}, r)
		assert.Equal(t, float64(permitT0.UnixMilli()+10_000), permitScore(t, rdb, "pes", id2))
		assert.Equal(t, int64(2), rdb.ZCard(ctx, PermitTimeoutKey("pes")).Val())
		assert.Equal(t, "0", rdb.Get(ctx, "pes").Val())

		r = permitAcquire(t, s, rdb, "pes", id3, time.Second, permitT0.Add(4*time.Second))
		assert.Equal(t, PermitResult{Available: 0, NextExpiry: 6 * time.Second}, r, "refused: the nearest lease end")

		released, err := s.PermitRelease(ctx, rdb, "pes", "rel-1", id1, permitT0)
		require.NoError(t, err)
		assert.True(t, released)
		assert.Equal(t, "redisson_sc:{pes} 1", sub.next())
		released, err = s.PermitRelease(ctx, rdb, "pes", "rel-1", id1, permitT0)
		require.NoError(t, err)
		assert.True(t, released, "the same request again: its first result")
		semLatchTTL(t, rdb, OpLatchKey("pes", "rel-1"))
		semLatchTTL(t, rdb, PermitSpentKey("pes", id1))
		released, err = s.PermitRelease(ctx, rdb, "pes", "rel-2", id1, permitT0)
		require.NoError(t, err)
		assert.False(t, released, "a second release of one permit")
		assert.Equal(t, "1", rdb.Get(ctx, "pes").Val(), "one permit given back")

		_, _, err = s.PermitAcquire(ctx, rdb, ReplicaSync{}, "pes", id1, 0, permitT0)
		require.ErrorContains(t, err, "spent", "a released permit ID is never acquired again")
		assert.Equal(t, "1", rdb.Get(ctx, "pes").Val())

		n, err := s.PermitAvailable(ctx, rdb, "pes", permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		n, err = s.PermitAvailable(ctx, rdb, "missing", permitT0)
		require.NoError(t, err)
		assert.Zero(t, n)
		sub.none()
	})
}

// TestPermitLeaseExpiry: REDISSON_BEHAVIOURS 56-57 (testExpire,
// testReleaseExpired, updateLeaseTime after expiry).
func TestPermitLeaseExpiry(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.PermitTrySetPermits(ctx, rdb, "lease", 1, permitT0)
		require.NoError(t, err)
		sub := semSubscribe(t, rdb, SemaphoreChannel("lease"))

		id1, id2 := NewPermitID(), NewPermitID()
		r := permitAcquire(t, s, rdb, "lease", id1, 2*time.Second, permitT0)
		require.True(t, r.Acquired)
		r = permitAcquire(t, s, rdb, "lease", id2, 2*time.Second, permitT0.Add(time.Second))
		assert.Equal(t, PermitResult{NextExpiry: time.Second}, r)
		r = permitAcquire(t, s, rdb, "lease", id2, 2*time.Second, permitT0.Add(1999*time.Millisecond))
		assert.Equal(t, PermitResult{NextExpiry: time.Millisecond}, r)
		sub.none()

		r = permitAcquire(t, s, rdb, "lease", id2, 2*time.Second, permitT0.Add(2*time.Second))
		assert.Equal(t, PermitResult{Acquired: true, PermitID: id2, Available: 0}, r, "the lease ended: reclaimed and taken")
		assert.Equal(t, "redisson_sc:{lease} 1", sub.next(), "a reclaim publishes")
		assert.Equal(t, float64(-1), permitScore(t, rdb, "lease", id1))

		released, err := s.PermitRelease(ctx, rdb, "lease", "rel-1", id1, permitT0.Add(2*time.Second))
		require.NoError(t, err)
		assert.False(t, released, "an expired permit is not released")
		ok, err := s.PermitUpdateLease(ctx, rdb, "lease", id1, time.Minute, permitT0.Add(2*time.Second))
		require.NoError(t, err)
		assert.False(t, ok, "updateLease after expiry")
		sub.none()

		ok, err = s.PermitUpdateLease(ctx, rdb, "lease", id2, time.Minute, permitT0.Add(3*time.Second))
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, float64(permitT0.UnixMilli()+63_000), permitScore(t, rdb, "lease", id2), "lease counted from now")
		ok, err = s.PermitUpdateLease(ctx, rdb, "lease", id2, 0, permitT0.Add(3*time.Second))
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, float64(permitNoExpiry), permitScore(t, rdb, "lease", id2), "lease 0: never expires")

		n, err := s.PermitAvailable(ctx, rdb, "lease", permitT0.Add(1000*time.Hour))
		require.NoError(t, err)
		assert.Zero(t, n, "a permit without a lease is never reclaimed")

		member, err := permitMember(id2)
		require.NoError(t, err)
		v, err := permitUpdateLeaseScript.Run(ctx, rdb, []string{"lease", PermitTimeoutKey("lease"), SemaphoreChannel("lease")},
			member, "9007199254740992", strconv.FormatInt(permitT0.UnixMilli(), 10), "publish").Int64()
		require.NoError(t, err, "2^53 ms is the longest lease")
		assert.Equal(t, int64(1), v)
		assert.Equal(t, float64(permitNoExpiry), permitScore(t, rdb, "lease", id2), "a lease past Redisson's never-expires score")
		sub.none()
	})
}

func TestPermitNextExpiryIsNearest(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.PermitTrySetPermits(ctx, rdb, "near", 3, permitT0)
		require.NoError(t, err)
		for _, lease := range []time.Duration{5 * time.Second, 0, 2 * time.Second} {
			require.True(t, permitAcquire(t, s, rdb, "near", NewPermitID(), lease, permitT0).Acquired)
		}
		r := permitAcquire(t, s, rdb, "near", NewPermitID(), 0, permitT0.Add(500*time.Millisecond))
		assert.Equal(t, PermitResult{NextExpiry: 1500 * time.Millisecond}, r)

		_, err = s.PermitTrySetPermits(ctx, rdb, "forever", 1, permitT0)
		require.NoError(t, err)
		require.True(t, permitAcquire(t, s, rdb, "forever", NewPermitID(), 0, permitT0).Acquired)
		r = permitAcquire(t, s, rdb, "forever", NewPermitID(), 0, permitT0)
		assert.Equal(t, PermitResult{}, r, "no held permit expires: NextExpiry 0")
		r = permitAcquire(t, s, rdb, "empty", NewPermitID(), 0, permitT0)
		assert.Equal(t, PermitResult{}, r, "a missing semaphore")
		assert.Zero(t, rdb.Exists(ctx, "empty", PermitTimeoutKey("empty")).Val(), "a refused acquire writes nothing")
	})
}

func TestPermitReclaimsManyExpired(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		const held = 2500 // more than one reclaim chunk, and than unpack takes
		members := make([]redis.Z, held)
		for i := range members {
			members[i] = redis.Z{Score: float64(permitT0.UnixMilli() + int64(i)), Member: fmt.Sprintf("permit-%012d", i)}
		}
		require.NoError(t, rdb.ZAdd(ctx, PermitTimeoutKey("many"), members...).Err())
		require.NoError(t, rdb.Set(ctx, "many", "0", 0).Err())
		sub := semSubscribe(t, rdb, SemaphoreChannel("many"))

		n, err := s.PermitAvailable(ctx, rdb, "many", permitT0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(1001), n, "lease ends at or before now are reclaimed")
		assert.Equal(t, "redisson_sc:{many} 1001", sub.next())
		n, err = s.PermitAvailable(ctx, rdb, "many", permitT0.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(held), n)
		assert.Equal(t, "redisson_sc:{many} "+strconv.Itoa(held), sub.next(), "one message per reclaim")
		assert.Zero(t, rdb.Exists(ctx, PermitTimeoutKey("many")).Val())
		sub.none()
	})
}

func TestPermitReclaimPublishesOnlyAboveZero(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.PermitTrySetPermits(ctx, rdb, "low", 1, permitT0)
		require.NoError(t, err)
		require.True(t, permitAcquire(t, s, rdb, "low", NewPermitID(), time.Second, permitT0).Acquired)
		n, err := s.PermitAddPermits(ctx, rdb, "low", "add-1", -3, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(-3), n)
		sub := semSubscribe(t, rdb, SemaphoreChannel("low"))
		n, err = s.PermitAvailable(ctx, rdb, "low", permitT0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(-2), n, "reclaimed, still below 1")
		sub.none()
	})
}

func TestPermitAddPermitsExactlyOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		sub := semSubscribe(t, rdb, SemaphoreChannel("add"))
		n, err := s.PermitAddPermits(ctx, rdb, "add", "a1", 4, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(4), n)
		assert.Equal(t, "redisson_sc:{add} 4", sub.next())
		n, err = s.PermitAddPermits(ctx, rdb, "add", "a1", 4, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(4), n, "the same request again: its first result")
		assert.Equal(t, "4", rdb.Get(ctx, "add").Val())
		semLatchTTL(t, rdb, OpLatchKey("add", "a1"))
		n, err = s.PermitAddPermits(ctx, rdb, "add", "a2", -6, permitT0)
		require.NoError(t, err)
		assert.Equal(t, int64(-2), n)
		sub.none()

		_, err = s.PermitRelease(ctx, rdb, "add", "a1", NewPermitID(), permitT0)
		require.ErrorContains(t, err, "request id already used")
	})
}

func TestPermitUndoAcquire(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.PermitTrySetPermits(ctx, rdb, "pu", 1, permitT0)
		require.NoError(t, err)
		sub := semSubscribe(t, rdb, SemaphoreChannel("pu"))

		id := NewPermitID()
		require.True(t, permitAcquire(t, s, rdb, "pu", id, time.Minute, permitT0).Acquired)
		undone, err := s.PermitUndoAcquire(ctx, rdb, "pu", id, permitT0)
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "redisson_sc:{pu} 1", sub.next())
		assert.Equal(t, "1", rdb.Get(ctx, "pu").Val())
		undone, err = s.PermitUndoAcquire(ctx, rdb, "pu", id, permitT0)
		require.NoError(t, err)
		assert.False(t, undone, "undone once")

		late := NewPermitID()
		undone, err = s.PermitUndoAcquire(ctx, rdb, "pu", late, permitT0)
		require.NoError(t, err)
		assert.False(t, undone, "never acquired")
		semLatchTTL(t, rdb, PermitSpentKey("pu", late))
		_, _, err = s.PermitAcquire(ctx, rdb, ReplicaSync{}, "pu", late, 0, permitT0)
		require.ErrorContains(t, err, "spent", "an acquire reaching Redis after its undo takes nothing")
		assert.Equal(t, "1", rdb.Get(ctx, "pu").Val())
		assert.Zero(t, rdb.Exists(ctx, PermitTimeoutKey("pu")).Val())
		sub.none()
	})
}

func TestPermitAcquireWaitsForReplicas(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, err := s.PermitTrySetPermits(ctx, rdb, "rs", 1, permitT0)
		require.NoError(t, err)
		rs := ReplicaSync{Replicas: 1, Timeout: 20 * time.Millisecond}
		r, acks, err := s.PermitAcquire(ctx, rdb, rs, "rs", NewPermitID(), 0, permitT0)
		require.NoError(t, err)
		assert.True(t, r.Acquired)
		assert.Zero(t, acks, "no replicas")
		acquired, avail, acks, err := s.SemaphoreAcquire(ctx, rdb, rs, "rs-sem", "a1", 1)
		require.NoError(t, err)
		assert.False(t, acquired)
		assert.Zero(t, avail)
		assert.Zero(t, acks)
	})
}

func TestPermitRejectsBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		good := NewPermitID()
		for _, id := range []string{"1234", "", "0123456789ABCDEF0123456789abcdef", "zz23456789abcdef0123456789abcdef"} {
			_, _, err := s.PermitAcquire(ctx, rdb, ReplicaSync{}, "bad", id, 0, permitT0)
			require.Error(t, err, "acquire %q", id)
			_, err = s.PermitRelease(ctx, rdb, "bad", "r", id, permitT0)
			require.Error(t, err, "release %q", id)
			_, err = s.PermitUpdateLease(ctx, rdb, "bad", id, time.Second, permitT0)
			require.Error(t, err, "update lease %q", id)
			_, err = s.PermitUndoAcquire(ctx, rdb, "bad", id, permitT0)
			require.Error(t, err, "undo %q", id)
		}
		_, _, err := s.PermitAcquire(ctx, rdb, ReplicaSync{}, "bad", good, -time.Second, permitT0)
		require.Error(t, err, "negative lease")
		_, err = s.PermitUpdateLease(ctx, rdb, "bad", good, -time.Second, permitT0)
		require.Error(t, err, "negative lease")
		_, _, err = s.PermitAcquire(ctx, rdb, ReplicaSync{}, "bad", good, 0, time.UnixMilli(0))
		require.Error(t, err, "now before 1970")
		_, err = s.PermitTrySetPermits(ctx, rdb, "bad", -1, permitT0)
		require.Error(t, err)
		_, err = s.PermitAddPermits(ctx, rdb, "bad", "r", 1<<53+1, permitT0)
		require.Error(t, err)

		member, err := permitMember(good)
		require.NoError(t, err)
		keys := []string{"bad", PermitTimeoutKey("bad"), SemaphoreChannel("bad"), PermitSpentKey("bad", good)}
		for _, lease := range []string{"-1", "1.5", "", "1e3", "9007199254740993"} {
			require.Error(t, permitAcquireScript.Run(ctx, rdb, keys, member, lease, "1000", "publish").Err(), "lease %q", lease)
			require.Error(t, permitUpdateLeaseScript.Run(ctx, rdb, keys[:3], member, lease, "1000", "publish").Err(), "lease %q", lease)
		}
		for _, id := range []string{good, "short", ""} {
			require.Error(t, permitAcquireScript.Run(ctx, rdb, keys, id, "0", "1000", "publish").Err(), "id %q", id)
		}
		for _, now := range []string{"0", "-5", "x"} {
			require.Error(t, permitAcquireScript.Run(ctx, rdb, keys, member, "0", now, "publish").Err(), "now %q", now)
			require.Error(t, permitAvailableScript.Run(ctx, rdb, keys[:3], now, "publish").Err(), "now %q", now)
			require.Error(t, permitTrySetPermitsScript.Run(ctx, rdb, keys[:3], "1", now, "publish").Err(), "now %q", now)
		}
		require.Error(t, permitAcquireScript.Run(ctx, rdb, keys, member, "0", "1000", "flushall").Err())
		require.Error(t, permitReleaseScript.Run(ctx, rdb, append(keys[:3:3], OpLatchKey("bad", "r"), PermitSpentKey("bad", good)),
			member, "1000", "publish", "0").Err(), "latch ttl 0")
		require.Error(t, permitUndoAcquireScript.Run(ctx, rdb, keys, member, "1000", "publish", "x").Err())
		for _, p := range []string{"1.5", "-0", "", "x"} {
			require.Error(t, permitAddPermitsScript.Run(ctx, rdb, append(keys[:3:3], OpLatchKey("bad", "r")), p, "1000", "publish", "1000").Err(), "add %q", p)
			require.Error(t, permitTrySetPermitsScript.Run(ctx, rdb, keys[:3], p, "1000", "publish").Err(), "try set %q", p)
		}
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		// Not integers INCRBY takes: a word, leading zeros, past 2^63.
		for _, count := range []string{"many", "007", "99999999999999999999"} {
			require.NoError(t, rdb.Set(ctx, "bad", count, 0).Err())
			require.NoError(t, rdb.ZAdd(ctx, PermitTimeoutKey("bad"), redis.Z{Score: 1, Member: member}).Err())
			_, _, err = s.PermitAcquire(ctx, rdb, ReplicaSync{}, "bad", NewPermitID(), 0, permitT0)
			require.Error(t, err, "a non-integer count %q", count)
			assert.Equal(t, int64(1), rdb.ZCard(ctx, PermitTimeoutKey("bad")).Val(), "nothing reclaimed half way (count %q)", count)
		}
	})
}
