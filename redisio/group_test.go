package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// A group acquire or unlock repeated with its request ID (a retry after a
// lost reply) applies once; an undo reverses exactly the acquire it names.
func TestGroupAcquireAndUnlockAreIdempotentPerRequest(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		values := []string{"a", "b"}
		for range 3 {
			res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, values)
			require.NoError(t, err)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res, "the first result, again")
		}
		n, err := GroupHoldCount(ctx, rdb, "g", "o:1", values)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "applied once")
		res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r2", time.Minute, values)
		require.NoError(t, err)
		assert.Equal(t, 2, res.HoldCount, "a new request reenters")

		for range 3 {
			remaining, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u1", time.Minute, values)
			require.NoError(t, err)
			assert.True(t, held)
			assert.Equal(t, 1, remaining, "the first result, again")
		}
		undone, err := s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r1", values)
		require.NoError(t, err)
		assert.False(t, undone, "r1 is not the owner's last applied acquire")
		undone, err = s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r2", values)
		require.NoError(t, err)
		assert.True(t, undone, "r2 undone")
		assert.Zero(t, rdb.Exists(ctx, "g", AcquireLatchKey("g", "o:1")).Val(), "nothing held, no latch")
		undone, err = s.GroupUndoAcquire(ctx, rdb, "g", "o:1", "r2", values)
		require.NoError(t, err)
		assert.False(t, undone, "undone once")

		_, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u2", time.Minute, values)
		require.NoError(t, err)
		assert.False(t, held, "not held: ErrNotHeld")
	})
}

// An unlock naming a value the owner does not hold changes nothing (where
// Redisson counts down the values before it), and a refused acquire
// writes nothing.
func TestGroupScriptsChangeNothingWhenRefused(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		_, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, []string{"a", "b"})
		require.NoError(t, err)
		before := rdb.HGetAll(ctx, "g").Val()
		_, held, _, err := s.GroupUnlock(ctx, rdb, ReplicaSync{}, "g", "o:1", "u1", time.Minute, []string{"a", "c"})
		require.NoError(t, err)
		assert.False(t, held)
		res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:2", "r2", 5*time.Second, []string{"c", "b"})
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.InDelta(t, time.Minute.Milliseconds(), res.PTTL.Milliseconds(), 2000, "wait until b's hold ends")
		assert.Equal(t, before, rdb.HGetAll(ctx, "g").Val(), "nothing written")
	})
}

// Bad arguments are refused before any write.
func TestGroupScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	acq := func(args ...any) error {
		return groupAcquireScript.Run(ctx, rdb, []string{"g", AcquireLatchKey("g", "o")}, args...).Err()
	}
	for _, lease := range []string{"0", "-1", "1.5", "", "9007199254740993"} {
		require.Error(t, acq("o", lease, "r", "1000", "a"), "lease %q", lease)
	}
	require.Error(t, acq("", "1000", "r", "1000", "a"), "empty owner")
	require.Error(t, acq("o", "1000", "", "1000", "a"), "empty request id")
	require.Error(t, acq("o", "1000", "r", "1000"), "no values")
	require.Error(t, acq("o", "1000", "r", "1000", "a", ""), "an empty value")
	require.Error(t, acq("o", "1000", "r", "1000", "a:b"), "a value with ':'")
	unl := func(args ...any) error {
		return groupUnlockScript.Run(ctx, rdb, []string{"g", "c", UnlockRecordKey("g", "t"+groupRecord), "a"}, args...).Err()
	}
	require.Error(t, unl("0", "1000", "o", "flushall", "1000", "1", "u", "a"), "publish command")
	for _, seq := range []string{"0", "-1", "", "x", "9007199254740993"} {
		require.Error(t, unl("0", "1000", "o", "publish", "1000", seq, "u", "a"), "sequence number %q", seq)
	}
	require.Error(t, unl("0", "1000", "o", "publish", "1000", "1", "", "a"), "empty request id")
	require.Error(t, unl("0", "1000", "o", "publish", "1000", "1", "u"), "no values")
	require.Error(t, unl("0", "1000", "o", "publish", "1000", "1", "u", "a:b"), "a value with ':'")
	require.Error(t, groupRenewScript.Run(ctx, rdb, []string{"g"}, "0", "o", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "0", "o", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "1000", "", "a").Err())
	require.Error(t, groupExtendScript.Run(ctx, rdb, []string{"g"}, "1000", "o").Err())
	require.Error(t, groupForceUnlockScript.Run(ctx, rdb, []string{"g", "c"}, "0", "del", "a").Err())
	assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")
}

// An extend sets each of the owner's values' holds to end lease from now,
// shorter or longer, and the hash to live as long as its longest hold; an
// owner that does not hold every value changes nothing.
func TestGroupExtend(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	res, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:1", "r1", time.Minute, []string{"a", "b"})
	require.NoError(t, err)
	require.True(t, res.Acquired)
	res, _, err = s.GroupAcquire(ctx, rdb, ReplicaSync{}, "g", "o:2", "r2", 3*time.Second, []string{"c"})
	require.NoError(t, err)
	require.True(t, res.Acquired)

	before := rdb.HGetAll(ctx, "g").Val()
	ok, err := s.GroupExtend(ctx, rdb, "g", "o:2", []string{"a"}, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "o:2 does not hold a")
	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "c"}, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "o:1 does not hold c")
	assert.Equal(t, before, rdb.HGetAll(ctx, "g").Val(), "a refused extend writes nothing")

	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "b"}, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ttl := rdb.PTTL(ctx, "g").Val()
	assert.InDelta(t, (10 * time.Second).Milliseconds(), ttl.Milliseconds(), 1000, "cut to the longest hold, o:1's")
	for _, v := range []string{"a", "b"} {
		end, err := rdb.HGet(ctx, "g", v+":o:1:expire_time").Int64()
		require.NoError(t, err)
		assert.InDelta(t, time.Now().Add(10*time.Second).UnixMilli(), end, 1000, v)
	}
	ok, err = s.GroupExtend(ctx, rdb, "g", "o:1", []string{"a", "b"}, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ttl = rdb.PTTL(ctx, "g").Val()
	assert.Greater(t, ttl, 2*time.Second, "o:2's longer hold keeps the hash")
}

// roundTrips counts the commands and pipelines a client sends that run a
// script (not a new connection's handshake).
type roundTrips struct{ n int }

func (h *roundTrips) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if c.Name() == "evalsha" || c.Name() == "eval" {
			h.n++
			return
		}
	}
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

// A renewal batch with group lock holdings renews each (a group whose
// owner lost it reads false) and the other locks in one round trip, even
// when the server has the scripts to load again (one more).
func TestRenewWithGroupsIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	require.NoError(t, s.Load(ctx, rdb))
	for _, g := range []string{"g1", "g2"} {
		_, _, err := s.GroupAcquire(ctx, rdb, ReplicaSync{}, g, "o:1", "r-"+g, time.Second, []string{"a", "b"})
		require.NoError(t, err)
	}
	_, err := s.lockAcquire(ctx, rdb, "plain", "o:1", "r-plain", time.Second)
	require.NoError(t, err)
	batch := []Held{
		{Name: "g1", Field: "o:1", Values: "a" + GroupValueSep + "b"},
		{Name: "plain", Field: "o:1"},
		{Name: "g2", Field: "o:2", Values: "a"}, // another owner's
		{Name: "g2", Field: "o:1", Values: "b"},
		{Name: "gone", Field: "o:1"},
	}
	for _, flush := range []bool{false, true} {
		if flush {
			require.NoError(t, rdb.ScriptFlush(ctx).Err())
		}
		h := &roundTrips{}
		rdb.AddHook(h)
		ok, err := s.Renew(ctx, rdb, batch, time.Hour)
		n := h.n
		h.n = -1 << 30 // the hook stays on the client: count no more
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, false, true, false}, ok)
		want := 1
		if flush {
			want = 2 // EVALSHA answers NOSCRIPT, EVAL follows
		}
		assert.Equal(t, want, n, "round trips (flushed scripts: %v)", flush)
	}
	assert.Greater(t, rdb.PTTL(ctx, "g1").Val(), 59*time.Minute)
	assert.Greater(t, rdb.PTTL(ctx, "plain").Val(), 59*time.Minute)
}
