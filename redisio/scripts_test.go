package redisio

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// bothRedis runs fn against a real redis-server and against miniredis. ff
// lets key TTLs run down by d: a sleep on the real server, FastForward on
// miniredis.
func bothRedis(t *testing.T, fn func(t *testing.T, rdb *redis.Client, ff func(time.Duration))) {
	t.Helper()
	t.Run("redis", func(t *testing.T) {
		rdb := redistest.Start(t).Client(t)
		fn(t, rdb, time.Sleep)
	})
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		fn(t, rdb, m.FastForward)
	})
}

func newScripts(t testing.TB) *Scripts {
	s, err := NewScripts("publish")
	require.NoError(t, err)
	return s
}

// lockAcquire is one attempt of the reentrant lock's acquire as the engine
// makes it (AcquireWith on the name's LockArgs), without replica sync.
func (s *Scripts) lockAcquire(ctx context.Context, r Redis, name, owner, reqID string, lease time.Duration) (AcquireResult, error) {
	res, _, err := s.AcquireWith(ctx, r, ReplicaSync{}, s.LockArgs(name), owner, reqID, lease, false, false)
	return res, err
}

func TestNewScriptsRejectsUnknownPublish(t *testing.T) {
	_, err := NewScripts("PUBLISH; FLUSHALL")
	require.Error(t, err)
}

func TestScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	rec := AcquireRecordField("o")
	for _, lease := range []string{"0", "-1", "1.5", "1e3", "", " 5", "5 ", "05", "+5", "9223372036854775808", "9007199254740993",
		"10000000000000000", "abc"} {
		err := acquireScript.Run(ctx, rdb, []string{"k"}, "o", lease, "r1", rec).Err()
		require.Error(t, err, "lease %q", lease)
		err = acquireScript.Run(ctx, rdb, []string{"k", TokenKey("k")}, "o", lease, "r1", rec).Err()
		require.Error(t, err, "fenced lease %q", lease)
		unlockKeys := []string{"k", LockChannel("k"), UnlockRecordKey("k", "t")}
		err = unlockScript.Run(ctx, rdb, unlockKeys, "0", lease, "o", "publish", "1000", "1", "u").Err()
		require.Error(t, err, "unlock lease %q", lease)
		err = unlockScript.Run(ctx, rdb, unlockKeys, "0", "1000", "o", "publish", lease, "1", "u").Err()
		require.Error(t, err, "unlock record ttl %q", lease)
		err = unlockScript.Run(ctx, rdb, unlockKeys, "0", "1000", "o", "publish", "1000", lease, "u").Err()
		require.Error(t, err, "unlock sequence number %q", lease)
		err = renewScript.Run(ctx, rdb, []string{"k"}, lease, "o", "").Err()
		require.Error(t, err, "renew ttl %q", lease)
	}
	require.Error(t, acquireScript.Run(ctx, rdb, []string{"k"}, "", "1000", "r1", ":warden_acq").Err(), "empty owner")
	require.Error(t, acquireScript.Run(ctx, rdb, []string{"k"}, "o", "1000", "", rec).Err(), "empty request id")
	for _, bad := range []string{"", "o", "p:warden_acq", "o:warden_acq ", "o:1"} {
		require.Error(t, acquireScript.Run(ctx, rdb, []string{"k"}, "o", "1000", "r1", bad).Err(), "record field %q", bad)
		require.Error(t, undoAcquireScript.Run(ctx, rdb, []string{"k", "c"}, "o", "r1", "publish", "0", bad).Err(),
			"undo record field %q", bad)
	}
	require.Error(t, unlockScript.Run(ctx, rdb, []string{"k", "c", "l"}, "0", "1000", "o", "flushall", "1000", "1", "u").Err())
	require.Error(t, unlockScript.Run(ctx, rdb, []string{"k", "c", "l"}, "0", "1000", "", "publish", "1000", "1", "u").Err(), "empty owner")
	require.Error(t, unlockScript.Run(ctx, rdb, []string{"k", "c", "l"}, "0", "1000", "o", "publish", "1000", "1", "").Err(), "empty request id")
	require.Error(t, undoAcquireScript.Run(ctx, rdb, []string{"k", "c"}, "o", "r1", "del", "0", rec).Err())
	require.Error(t, undoAcquireScript.Run(ctx, rdb, []string{"k", "c"}, "o", "", "publish", "0", rec).Err(), "empty request id")
	require.Error(t, forceUnlockScript.Run(ctx, rdb, []string{"k", "c"}, "0", "del").Err())
	require.Error(t, renewScript.Run(ctx, rdb, []string{"k", "j"}, "1000", "o", "").Err(), "owners must match keys")
	assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

	ok, err := acquireScript.Run(ctx, rdb, []string{"k"}, "o", "9007199254740992", "r1", rec).Int64Slice()
	require.NoError(t, err, "2^53 ms is the longest lease")
	assert.Equal(t, []int64{1, 1}, ok)
}

// A hold count or token counter that is not an integer (a foreign writer)
// is refused before the script writes anything.
func TestAcquireRefusesCorruptValuesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	require.NoError(t, rdb.HSet(ctx, "bad", "o", "x1").Err())
	_, err := s.lockAcquire(ctx, rdb, "bad", "o", "r1", time.Minute)
	require.ErrorContains(t, err, "not an integer")
	_, _, err = s.Unlock(ctx, rdb, "bad", "o", "u1", time.Minute)
	require.ErrorContains(t, err, "not an integer")
	assert.Equal(t, map[string]string{"o": "x1"}, rdb.HGetAll(ctx, "bad").Val(), "nothing written")
	assert.Equal(t, []string{"bad"}, rdb.Keys(ctx, "*").Val(), "no latch written")
	for _, counter := range []string{"-0", "01", "1.5", "9007199254740993", "abc"} {
		require.NoError(t, rdb.Set(ctx, TokenKey("f"), counter, 0).Err())
		_, _, err = s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("f"), "o", "r1", time.Minute, true, false)
		require.ErrorContains(t, err, "not an integer", "counter %q", counter)
		assert.Zero(t, rdb.Exists(ctx, "f").Val(), "counter %q: nothing written", counter)
	}
	for _, counter := range []string{"0", "-5", "9007199254740991"} {
		require.NoError(t, rdb.Del(ctx, "f").Err())
		require.NoError(t, rdb.Set(ctx, TokenKey("f"), counter, 0).Err())
		_, _, err = s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("f"), "o", "r-"+counter, time.Minute, true, false)
		require.NoError(t, err, "counter %q", counter)
	}
}

func TestAcquireAndUnlockAreIdempotentPerRequest(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)

	r, err := s.lockAcquire(ctx, rdb, "lk", "o1", "req-1", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r)
	r, err = s.lockAcquire(ctx, rdb, "lk", "o1", "req-1", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r, "the same request again: its first result")
	r, err = s.lockAcquire(ctx, rdb, "lk", "o1", "req-2", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 2, r.HoldCount, "a new request re-enters")

	r, err = s.lockAcquire(ctx, rdb, "lk", "o2", "req-3", time.Minute)
	require.NoError(t, err)
	assert.False(t, r.Acquired)
	assert.InDelta(t, float64(time.Minute), float64(r.PTTL), float64(time.Second))

	n, held, err := s.Unlock(ctx, rdb, "lk", "o1", "u-1", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 1, n)
	n, held, err = s.Unlock(ctx, rdb, "lk", "o1", "u-1", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 1, n, "a retried unlock returns the first result and releases nothing")
	assert.Equal(t, "1", rdb.HGet(ctx, "lk", "o1").Val())

	sub := rdb.Subscribe(ctx, LockChannel("lk"))
	defer sub.Close()
	_, err = sub.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err, "the subscription confirmed")
	n, held, err = s.Unlock(ctx, rdb, "lk", "o1", "u-2", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Zero(t, n)
	v, err := sub.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err, "the last unlock's message")
	msg, ok := v.(*redis.Message)
	require.True(t, ok, "got %T %v, want the unlock message", v, v)
	assert.Equal(t, UnlockMessage, msg.Payload, "the last unlock publishes")
	assert.Zero(t, rdb.Exists(ctx, "lk").Val(), "lock deleted, its acquire record with it")
	n, held, err = s.Unlock(ctx, rdb, "lk", "o1", "u-2", time.Minute)
	require.NoError(t, err)
	assert.True(t, held, "retried last unlock: not 'not held'")
	assert.Zero(t, n)
	_, held, err = s.Unlock(ctx, rdb, "lk", "o1", "u-3", time.Minute)
	require.NoError(t, err)
	assert.False(t, held, "a new unlock of a free lock is refused")
	ttl := rdb.PTTL(ctx, UnlockRecordKey("lk", s.token)).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, LatchTTL)
}

func TestUnlockLatchIsPerOwner(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	_, err := s.lockAcquire(ctx, rdb, "per-owner", "o1", "a", time.Minute)
	require.NoError(t, err)
	_, _, err = s.Unlock(ctx, rdb, "per-owner", "o1", "same-id", time.Minute)
	require.NoError(t, err)
	_, err = s.lockAcquire(ctx, rdb, "per-owner", "o2", "a", time.Minute)
	require.NoError(t, err)
	n, held, err := s.Unlock(ctx, rdb, "per-owner", "o2", "same-id", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Zero(t, n)
	assert.Zero(t, rdb.Exists(ctx, "per-owner").Val(), "o2's unlock ran: it did not get o1's cached result")
}

func TestAcquireLatchNeverRevivesAnExpiredHold(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	_, err := s.lockAcquire(ctx, rdb, "short", "o1", "req-1", 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(80 * time.Millisecond)
	r, err := s.lockAcquire(ctx, rdb, "short", "o1", "req-1", 50*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r, "a retry after expiry acquires afresh")
}

func TestUndoAcquire(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	undone, err := s.UndoAcquire(ctx, rdb, "u", "o1", "never-ran")
	require.NoError(t, err)
	assert.False(t, undone)

	_, err = s.lockAcquire(ctx, rdb, "u", "o1", "a1", time.Minute)
	require.NoError(t, err)
	_, err = s.lockAcquire(ctx, rdb, "u", "o1", "a2", time.Minute)
	require.NoError(t, err)
	undone, err = s.UndoAcquire(ctx, rdb, "u", "o1", "a1")
	require.NoError(t, err)
	assert.False(t, undone, "only the last applied request can be undone")
	undone, err = s.UndoAcquire(ctx, rdb, "u", "o1", "a2")
	require.NoError(t, err)
	assert.True(t, undone)
	assert.Equal(t, "1", rdb.HGet(ctx, "u", "o1").Val())
	undone, err = s.UndoAcquire(ctx, rdb, "u", "o1", "a2")
	require.NoError(t, err)
	assert.False(t, undone, "undo is itself applied once")
}

func TestRenewBatchAndForceUnlock(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	for i := range 3 {
		_, err := s.lockAcquire(ctx, rdb, "r"+strconv.Itoa(i), "o", "q"+strconv.Itoa(i), time.Second)
		require.NoError(t, err)
	}
	ok, err := s.Renew(ctx, rdb, []Held{{Name: "r0", Field: "o"}, {Name: "r1", Field: "other"}, {Name: "r2", Field: "o"}, {Name: "missing", Field: "o"}}, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true, false}, ok)
	assert.Greater(t, rdb.PTTL(ctx, "r0").Val(), 59*time.Minute)
	assert.LessOrEqual(t, rdb.PTTL(ctx, "r1").Val(), time.Second, "another owner's lock is not renewed")

	deleted, err := s.ForceUnlock(ctx, rdb, "r1")
	require.NoError(t, err)
	assert.True(t, deleted)
	deleted, err = s.ForceUnlock(ctx, rdb, "r1")
	require.NoError(t, err)
	assert.False(t, deleted)
}

// A plain lock's renewal sets its TTL, even shorter; a read/write lock's
// hash is shared by holds with their own leases, and a renewal of any of
// them, the write hold included, only raises it.
func TestRenewSetsAnOwnHashAndRaisesASharedOne(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		_, err := f.s.lockAcquire(f.ctx, rdb, "plain", "o", "p1", time.Hour)
		require.NoError(t, err)
		f.write("rw", "w", time.Second)
		f.read("rw", "w", 40*time.Second) // a downgrade: the writer also reads
		f.write("wonly", "w", 500*time.Millisecond)
		f.read("ronly", "a", 40*time.Second)
		f.read("ronly", "b", 500*time.Millisecond)
		f.read("ronly", "b", 500*time.Millisecond)
		f.read("mixed", "m", 40*time.Second) // an explicit hold, then a watchdog one
		f.read("mixed", "m", time.Second)

		ok, err := f.s.Renew(f.ctx, rdb, []Held{
			{Name: "plain", Field: "o"},
			{Name: "rw", Field: WriteField("w"), Shared: true},
			{Name: "wonly", Field: WriteField("w"), Shared: true},
			{Name: "ronly", Field: "b", ReadPrefix: ReadTimeoutPrefix("ronly", "b"), Shared: true},
			{Name: "mixed", Field: "m", ReadPrefix: ReadTimeoutPrefix("mixed", "m"), Shared: true},
		}, 3*time.Second)
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, true, true, true}, ok)
		f.assertPTTL(ReadTimeoutPrefix("mixed", "m")+":1", 40*time.Second, "a renewal never cuts its owner's longer explicit hold")
		f.assertPTTL(ReadTimeoutPrefix("mixed", "m")+":2", 3*time.Second, "and raises the watchdog hold")

		f.assertPTTL("plain", 3*time.Second, "a plain lock's renewal sets its TTL, even shorter")
		readKey := ReadTimeoutPrefix("rw", "w") + ":1"
		lock := f.pttl("rw")
		assert.GreaterOrEqual(t, lock, f.pttl(readKey), "the write renewal never cuts the owner's read hold")
		assert.Greater(t, lock, 39*time.Second)
		f.assertPTTL(readKey, 40*time.Second, "the write renewal leaves the owner's read holds' leases")
		f.assertPTTL("wonly", 3*time.Second, "a write renewal raises a shorter TTL")
		f.assertPTTL("ronly", 40*time.Second, "a read renewal never cuts another reader's lease")
		f.assertPTTL(ReadTimeoutPrefix("ronly", "b")+":1", 3*time.Second, "a read renewal renews its own holds")
		f.assertPTTL(ReadTimeoutPrefix("ronly", "b")+":2", 3*time.Second, "a read renewal renews its own holds")
		f.assertPTTL(ReadTimeoutPrefix("ronly", "a")+":1", 40*time.Second, "and never another reader's")
		assert.Zero(t, rdb.Exists(f.ctx, ReadTimeoutPrefix("rw", WriteField("w"))+":1").Val(),
			"a write hold has no timeout key, and its renewal makes none")
	})
}

// FuzzAcquireLease runs the acquire script with arbitrary lease strings: it
// either refuses before writing, or sets exactly that TTL.
func FuzzAcquireLease(f *testing.F) {
	m := miniredis.NewMiniRedis()
	require.NoError(f, m.Start())
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	for _, seed := range []string{"1", "1000", "0", "-5", "1.5", "1e3", "9007199254740992", "9007199254740993", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, lease string) {
		ctx := context.Background()
		m.FlushAll()
		res, err := acquireScript.Run(ctx, rdb, []string{"k"}, "o", lease, "r", AcquireRecordField("o")).Int64Slice()
		if err != nil {
			if len(m.Keys()) > 0 {
				t.Fatalf("lease %q: refused but wrote", lease)
			}
			return
		}
		want, perr := strconv.ParseInt(lease, 10, 64)
		if perr != nil || want < 1 || strconv.FormatInt(want, 10) != lease {
			t.Fatalf("lease %q accepted", lease)
		}
		if res[0] != 1 {
			t.Fatalf("lease %q: reply %v", lease, res)
		}
		if want > math.MaxInt64/int64(time.Millisecond) {
			return // beyond time.Duration: miniredis cannot show this TTL
		}
		if m.TTL("k") != time.Duration(want)*time.Millisecond {
			t.Fatalf("lease %q: reply %v ttl %v", lease, res, m.TTL("k"))
		}
	})
}

// A call that waits for replicas goes as EVALSHA and WAIT in one pipeline;
// on a server without the script cached it sends the pipeline again with
// the source.
func TestSyncedCallsSendUncachedScripts(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		rs := ReplicaSync{Replicas: 1, Timeout: 20 * time.Millisecond}
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		res, acks, err := s.AcquireWith(ctx, rdb, rs, s.LockArgs("sync"), "o", "r1", time.Minute, false, false)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res)
		assert.Zero(t, acks, "no replicas")
		require.NoError(t, rdb.ScriptFlush(ctx).Err())
		left, held, acks, err := s.UnlockSynced(ctx, rdb, rs, "sync", "o", "u1", time.Minute)
		require.NoError(t, err)
		assert.True(t, held)
		assert.Zero(t, left)
		assert.Zero(t, acks)
		assert.Zero(t, rdb.Exists(ctx, "sync").Val())
	})
}
