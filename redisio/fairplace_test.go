package redisio

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acquirePlace is one attempt of a waiter whose place is a refreshed one,
// with place time place.
func (f *fairT) acquirePlace(owner, reqID string, place time.Duration, now time.Time) AcquireResult {
	f.t.Helper()
	r, _, err := f.s.FairAcquire(f.ctx, f.rdb, ReplicaSync{}, f.name, owner, reqID, fairLease, fairAllowance, place, now, true)
	require.NoError(f.t, err)
	return r
}

// places returns the refreshed places as owner -> unix ms.
func (f *fairT) places() map[string]int64 {
	f.t.Helper()
	all, err := f.rdb.HGetAll(f.ctx, FairPlacesKey(f.name)).Result()
	require.NoError(f.t, err)
	out := make(map[string]int64, len(all))
	for o, d := range all {
		n, err := strconv.ParseInt(d, 10, 64)
		require.NoError(f.t, err)
		out[o] = n
	}
	return out
}

// fairMillis is fairAt(d) in unix ms.
func fairMillis(d time.Duration) int64 { return fairAt(d).UnixMilli() }

// near asserts that got is want within a few ms: deadlines counted from
// the lock's PTTL, which runs on Redis's clock, not the test's.
func near(t *testing.T, want, got int64, what string) {
	t.Helper()
	assert.InDelta(t, want, got, 100, "%s: want %d, got %d", what, want-fairNow.UnixMilli(), got-fairNow.UnixMilli())
}

// A warden waiter's place (a refreshed one) sits among places written as
// Redisson writes them. Every deadline is written with Redisson's formula
// (the tail's deadline, or now + the lock's PTTL, plus the allowance), so
// they increase in queue order; the warden waiter's liveness is kept
// beside them in the places record, refreshed by each attempt of its
// owner's, and a lapsed one is dropped wherever it stands. A refresh keeps
// its deadline at least its place time plus the widest allowance ahead of
// it (5 minutes for a head whose own cannot be read) past the deadline
// ahead, moving the deadlines behind it up as much, so that Redisson's
// acquire (which moves everyone behind the taker down by its allowance)
// never leaves a live warden waiter's deadline in the past.
func TestFairWardenPlaces(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fp")
		const place = time.Second
		lease, allow := fairLease.Milliseconds(), fairAllowance.Milliseconds()
		redissonHead := (5 * time.Minute).Milliseconds()
		at := func(d time.Duration) int64 { return fairMillis(d) }
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)

		// a and b warden waiters, r a Redisson place between them: each
		// deadline the previous one plus the allowance, a warden waiter's
		// protected as it joins: b's is moved up to r's + its place time
		// + 5 minutes (r's 5 s is narrower), plus a place time of margin;
		// a's, the head's, is far enough ahead.
		require.False(t, f.acquirePlace("a", "a1", place, fairNow).Acquired)
		require.False(t, f.acquire("r", "r1", fairNow, true).Acquired)
		require.False(t, f.acquirePlace("b", "b1", place, fairNow).Acquired)
		assert.Equal(t, []string{"a", "r", "b"}, f.queue())
		d := f.deadlines()
		near(t, at(0)+lease+allow, d["a"], "a: now + PTTL + allowance")
		assert.Equal(t, d["a"]+allow, d["r"], "r: a's + allowance")
		assert.Equal(t, d["r"]+2*place.Milliseconds()+redissonHead, d["b"], "b protected as it joined")
		assert.Equal(t, map[string]int64{"a": at(place), "b": at(place)}, f.places(), "liveness beside them")
		ttl := rdb.PTTL(f.ctx, FairPlacesKey("fp")).Val()
		assert.Greater(t, ttl, time.Duration(d["b"]-at(0))*time.Millisecond, "the record outlives every deadline: %v", ttl)

		// a's and b's attempts keep them alive; their deadlines, far
		// enough ahead, stay.
		now := fairAt(600 * time.Millisecond)
		require.False(t, f.acquirePlace("a", "a2", place, now).Acquired)
		require.False(t, f.acquirePlace("b", "b2", place, now).Acquired)
		d2 := f.deadlines()
		assert.Equal(t, d["a"], d2["a"])
		assert.Equal(t, d["r"], d2["r"])
		assert.Equal(t, d["b"], d2["b"], "b still protected")
		assert.Equal(t, map[string]int64{"a": at(1600 * time.Millisecond), "b": at(1600 * time.Millisecond)}, f.places())

		// a takes the lock from the head: everyone behind moves down so
		// that the next deadline is its allowance past the new lease's end.
		now = fairAt(700 * time.Millisecond)
		_, held := f.unlock("h", "hu", now)
		require.True(t, held)
		require.True(t, f.acquirePlace("a", "a3", place, now).Acquired)
		d3 := f.deadlines()
		near(t, at(700*time.Millisecond)+lease+allow, d3["r"], "r: now + lease + its allowance")
		assert.Equal(t, d2["b"]-d2["r"], d3["b"]-d3["r"], "b's distance to r kept")
		assert.Equal(t, map[string]int64{"b": at(1600 * time.Millisecond)}, f.places())

		// b's liveness lapses behind r, which is alive: dropped all the
		// same.
		require.False(t, f.acquire("r", "r2", fairAt(1700*time.Millisecond), true).Acquired)
		assert.Equal(t, []string{"r"}, f.queue())
		assert.Equal(t, map[string]int64{"r": d3["r"]}, f.deadlines(), "r's deadline as it was")
		assert.Empty(t, f.places())

		// c joins behind r, protected at once: a Redisson acquire ahead
		// of it (moving its deadline down by 5 minutes) leaves its
		// deadline ahead of now, so Redisson's own scripts keep it too
		// (before, the join left it at r's + 5 s, which such an acquire
		// put minutes into the past until c's next attempt). c stays, and
		// its next refresh moves its deadline up again.
		now = fairAt(1800 * time.Millisecond)
		require.False(t, f.acquirePlace("c", "c1", place, now).Acquired)
		cDeadline := d3["r"] + 2*place.Milliseconds() + redissonHead
		assert.Equal(t, cDeadline, f.deadlines()["c"], "protected as it joined")
		require.NoError(t, rdb.ZIncrBy(f.ctx, FairTimeoutKey("fp"), -float64(redissonHead), "c").Err())
		assert.Greater(t, f.deadlines()["c"], at(2*time.Second), "still ahead after the Redisson acquire")
		require.False(t, f.acquire("r", "r3", now.Add(100*time.Millisecond), true).Acquired)
		assert.Equal(t, []string{"r", "c"}, f.queue(), "c kept its place")
		require.False(t, f.acquirePlace("c", "c2", place, now.Add(200*time.Millisecond)).Acquired)
		assert.Equal(t, cDeadline, f.deadlines()["c"], "protected again")

		// A Redisson place e behind c, then a warden waiter g: g's
		// protection counts e's allowance (read off the deadlines), not
		// c's (a warden waiter's moves nobody into the past).
		require.False(t, f.acquireLease("e", "e1", fairLease, now.Add(300*time.Millisecond), true).Acquired)
		require.False(t, f.acquirePlace("g", "g1", place, now.Add(300*time.Millisecond)).Acquired)
		require.False(t, f.acquirePlace("g", "g2", place, now.Add(400*time.Millisecond)).Acquired)
		assert.Equal(t, cDeadline+allow+2*place.Milliseconds()+redissonHead, f.deadlines()["g"])

		// c gives up: everyone behind it moves down by how far its
		// deadline was past r's, so e is r's + its allowance again.
		f.cancel("c", now.Add(500*time.Millisecond))
		d4 := f.deadlines()
		assert.Equal(t, d3["r"]+allow, d4["e"])
		assert.Equal(t, d4["e"]+2*place.Milliseconds()+redissonHead, d4["g"])

		// A late attempt of the request that gave up neither queues it nor
		// keeps a place alive for it.
		res, _, err := f.s.FairAcquire(f.ctx, rdb, ReplicaSync{}, "fp", "c", "gave-up", fairLease, fairAllowance, place,
			now.Add(600*time.Millisecond), true)
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.Equal(t, []string{"r", "e", "g"}, f.queue())
		assert.Equal(t, []string{"g"}, ownersOf(f.places()))

		// The record goes with the queue's last waiter.
		f.cancel("g", now.Add(700*time.Millisecond))
		f.cancel("e", now.Add(700*time.Millisecond))
		f.cancel("r", now.Add(700*time.Millisecond))
		assert.Zero(t, rdb.Exists(f.ctx, FairQueueKey("fp"), FairTimeoutKey("fp"), FairPlacesKey("fp")).Val())
	})
}

// ownersOf is m's keys, sorted.
func ownersOf(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A refreshed waiter behind a dead refreshed head is bounded by the head's
// refreshed deadline, and takes the lock once it passes.
func TestFairRefreshedHeadLapses(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fl")
		const place = time.Second
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)
		require.False(t, f.acquirePlace("dead", "d1", place, fairNow).Acquired)
		require.False(t, f.acquirePlace("live", "l1", place, fairNow).Acquired)
		_, held := f.unlock("h", "hu", fairAt(100*time.Millisecond))
		require.True(t, held)

		r := f.acquirePlace("live", "l2", place, fairAt(400*time.Millisecond))
		assert.False(t, r.Acquired)
		assert.Equal(t, 600*time.Millisecond, r.PTTL, "until the dead head's deadline")
		r = f.acquirePlace("live", "l3", place, fairAt(place))
		assert.True(t, r.Acquired, "the dead head's place lapsed")
		assert.Zero(t, rdb.Exists(f.ctx, FairQueueKey("fl"), FairTimeoutKey("fl"), FairPlacesKey("fl")).Val())
	})
}

// An uncertain attempt of a warden waiter undone when it was not applied
// takes the waiter out of the queue and moves the places behind it down by
// its allowance: the next one's deadline is the lock's expiry plus its own
// allowance.
func TestFairUndoOfAWardenPlace(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fu")
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)
		require.False(t, f.acquirePlace("g", "g1", time.Second, fairNow).Acquired)
		require.False(t, f.acquire("r", "r1", fairNow, true).Acquired)
		assert.False(t, f.undo("g", "g1", fairAt(100*time.Millisecond)), "not applied")
		assert.Equal(t, []string{"r"}, f.queue())
		near(t, fairMillis(0)+(fairLease+fairAllowance).Milliseconds(), f.deadlines()["r"], "r")
		assert.Empty(t, f.places())
	})
}

// A Redisson place whose deadline is near 2^63 ms (tryLock with a wait of
// Long.MAX_VALUE) ahead of a warden waiter: the waiter joins behind it,
// and the places record gets a TTL all the same (PEXPIRE refused the
// deadline's, which failed the join after its writes and left the record
// without a TTL).
func TestFairWardenPlaceBehindAHugeRedissonDeadline(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fh")
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)
		const huge = 9.2e18 // ms, near 2^63
		require.NoError(t, rdb.RPush(f.ctx, FairQueueKey("fh"), "r").Err())
		require.NoError(t, rdb.ZAdd(f.ctx, FairTimeoutKey("fh"), redis.Z{Score: huge, Member: "r"}).Err())

		res, _, err := f.s.FairAcquire(f.ctx, rdb, ReplicaSync{}, "fh", "w", "w1", fairLease, fairAllowance, time.Second,
			fairNow, true)
		require.NoError(t, err, "the join behind the huge deadline")
		assert.False(t, res.Acquired)
		assert.Equal(t, []string{"r", "w"}, f.queue())
		assert.Equal(t, []string{"w"}, ownersOf(f.places()))
		ttl := rdb.PTTL(f.ctx, FairPlacesKey("fh")).Val()
		assert.Positive(t, ttl, "the places record has a TTL")

		// Its next attempt keeps it, and the record's TTL.
		res, _, err = f.s.FairAcquire(f.ctx, rdb, ReplicaSync{}, "fh", "w", "w2", fairLease, fairAllowance, time.Second,
			fairNow.Add(100*time.Millisecond), true)
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.Equal(t, []string{"r", "w"}, f.queue())
		assert.Positive(t, rdb.PTTL(f.ctx, FairPlacesKey("fh")).Val())
	})
}

// A head warden waiter whose deadline its refreshes must move up (the
// allowance it joined with is used up) is moved a place time further than
// it needs: the next refreshes write no deadline, the queue behind it
// included, until that margin is used up.
func TestFairProtectLeavesAMargin(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fm")
		const place = 20 * time.Second // its liveness outlasts the wait below
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)
		require.False(t, f.acquirePlace("a", "a1", place, fairNow).Acquired)
		require.False(t, f.acquire("r", "r1", fairNow, true).Acquired)
		d := f.deadlines()
		at := time.UnixMilli(d["a"]).Add(-place + 100*time.Millisecond) // its deadline is less than a place time ahead
		require.False(t, f.acquirePlace("a", "a2", place, at).Acquired)
		d2 := f.deadlines()
		assert.Equal(t, at.Add(2*place).UnixMilli(), d2["a"], "now + place time, plus a place time")
		assert.Equal(t, d2["a"]-d["a"], d2["r"]-d["r"], "the queue behind moved as much")
		for i, step := range []time.Duration{place / 3, 2 * place / 3, place - time.Millisecond} {
			require.False(t, f.acquirePlace("a", "a3-"+strconv.Itoa(i), place, at.Add(step)).Acquired)
			assert.Equal(t, d2, f.deadlines(), "a refresh %v later writes no deadline", step)
		}
	})
}
