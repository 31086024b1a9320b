package redisio

import (
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

// A refreshed place (a warden waiter's) sits among places written as
// Redisson writes them: each attempt of its owner's moves its deadline to
// now + the place time, and nothing else moves it; another waiter taking
// the lock or giving up moves no refreshed place, and a refreshed leaver
// moves nobody; a lapsed place is dropped wherever it stands; a Redisson
// place keeps the deadline it was written with.
func TestFairRefreshedPlaces(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fp")
		const place = time.Second
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)

		// a and b refreshed, r a Redisson place between them.
		require.False(t, f.acquirePlace("a", "a1", place, fairNow).Acquired)
		require.False(t, f.acquire("r", "r1", fairNow, true).Acquired)
		require.False(t, f.acquirePlace("b", "b1", place, fairNow).Acquired)
		assert.Equal(t, []string{"a", "r", "b"}, f.queue())
		rDeadline := fairMillis(place + fairAllowance) // behind a's deadline, by r's allowance
		assert.Equal(t, map[string]int64{"a": fairMillis(place), "r": rDeadline, "b": fairMillis(place)}, f.deadlines())
		assert.Equal(t, map[string]int64{"a": fairMillis(place), "b": fairMillis(place)}, f.places())
		ttl := rdb.PTTL(f.ctx, FairPlacesKey("fp")).Val()
		assert.True(t, ttl > 0 && ttl <= place, "the places record expires: %v", ttl)

		// a's next attempt refreshes a only.
		require.False(t, f.acquirePlace("a", "a2", place, fairAt(600*time.Millisecond)).Acquired)
		assert.Equal(t, map[string]int64{"a": fairMillis(1600 * time.Millisecond), "r": rDeadline, "b": fairMillis(place)}, f.deadlines())

		// a takes the lock from the head: nobody behind it moves (Redisson's
		// script would move every deadline down by the taker's allowance).
		_, held := f.unlock("h", "hu", fairAt(700*time.Millisecond))
		require.True(t, held)
		require.True(t, f.acquirePlace("a", "a3", place, fairAt(700*time.Millisecond)).Acquired)
		assert.Equal(t, map[string]int64{"r": rDeadline, "b": fairMillis(place)}, f.deadlines())
		assert.Equal(t, map[string]int64{"b": fairMillis(place)}, f.places())

		// b's place lapses behind r, which is alive: dropped all the same.
		require.False(t, f.acquire("r", "r2", fairAt(1200*time.Millisecond), true).Acquired)
		assert.Equal(t, []string{"r"}, f.queue())
		assert.Equal(t, map[string]int64{"r": rDeadline}, f.deadlines(), "r's deadline as it was written")
		assert.Empty(t, f.places())

		// A Redisson script moves c's score down by its allowance: c's
		// deadline is still the one its refresh recorded.
		now := fairAt(1300 * time.Millisecond)
		require.False(t, f.acquirePlace("c", "c1", place, now).Acquired)
		require.NoError(t, rdb.ZIncrBy(f.ctx, FairTimeoutKey("fp"), -float64(fairAllowance.Milliseconds()), "c").Err())
		require.False(t, f.acquire("r", "r3", now.Add(100*time.Millisecond), true).Acquired)
		assert.Equal(t, []string{"r", "c"}, f.queue(), "c kept its place")
		require.False(t, f.acquirePlace("c", "c2", place, now.Add(200*time.Millisecond)).Acquired)
		assert.Equal(t, fairMillis(2500*time.Millisecond), f.deadlines()["c"], "refreshed again")

		// c gives up: r does not move. A late attempt of the request that
		// gave up neither queues it nor refreshes a place for it.
		f.cancel("c", now.Add(300*time.Millisecond))
		assert.Equal(t, map[string]int64{"r": rDeadline}, f.deadlines())
		res, _, err := f.s.FairAcquire(f.ctx, rdb, ReplicaSync{}, "fp", "c", "gave-up", fairLease, fairAllowance, place,
			now.Add(400*time.Millisecond), true)
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.Equal(t, []string{"r"}, f.queue())
		assert.Empty(t, f.places())

		// A refreshed place Redisson's script dropped leaves its record
		// behind; the record goes with the queue's last waiter.
		require.False(t, f.acquirePlace("d", "d1", place, now.Add(500*time.Millisecond)).Acquired)
		require.NoError(t, rdb.LRem(f.ctx, FairQueueKey("fp"), 0, "d").Err())
		require.NoError(t, rdb.ZRem(f.ctx, FairTimeoutKey("fp"), "d").Err())
		f.cancel("r", now.Add(600*time.Millisecond))
		assert.Zero(t, rdb.Exists(f.ctx, FairQueueKey("fp"), FairTimeoutKey("fp"), FairPlacesKey("fp")).Val())
	})
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

// An uncertain attempt of a refreshed waiter undone when it was not
// applied takes the waiter out of the queue and moves nobody.
func TestFairUndoOfARefreshedPlaceMovesNobody(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fu")
		require.True(t, f.acquire("h", "h1", fairNow, false).Acquired)
		require.False(t, f.acquirePlace("g", "g1", time.Second, fairNow).Acquired)
		require.False(t, f.acquire("r", "r1", fairNow, true).Acquired)
		before := f.deadlines()["r"]
		assert.False(t, f.undo("g", "g1", fairAt(100*time.Millisecond)), "not applied")
		assert.Equal(t, []string{"r"}, f.queue())
		assert.Equal(t, map[string]int64{"r": before}, f.deadlines())
		assert.Empty(t, f.places())
	})
}
