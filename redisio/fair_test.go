package redisio

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	fairLease     = 30 * time.Second
	fairAllowance = 5 * time.Second
	// fairSlack absorbs the milliseconds a real server's PTTL loses while a
	// test runs.
	fairSlack = float64(300 * time.Millisecond)
)

// fairNow is the caller's clock in these tests: the scripts never read
// Redis's clock, so a fixed instant makes the deadline arithmetic exact.
var fairNow = time.UnixMilli(1_700_000_000_000)

// fairT bundles what a fair-lock scenario needs, so each step reads as one
// line.
type fairT struct {
	t    *testing.T
	ctx  context.Context
	rdb  *redis.Client
	s    *Scripts
	name string
}

func newFairT(t *testing.T, rdb *redis.Client, name string) *fairT {
	return &fairT{t: t, ctx: context.Background(), rdb: rdb, s: newScripts(t), name: name}
}

func (f *fairT) acquire(owner, reqID string, now time.Time, enqueue bool) AcquireResult {
	f.t.Helper()
	return f.acquireLease(owner, reqID, fairLease, now, enqueue)
}

func (f *fairT) acquireLease(owner, reqID string, lease time.Duration, now time.Time, enqueue bool) AcquireResult {
	f.t.Helper()
	r, acks, err := f.s.FairAcquire(f.ctx, f.rdb, ReplicaSync{}, f.name, owner, reqID, lease, fairAllowance, 0, now, enqueue)
	require.NoError(f.t, err)
	assert.Zero(f.t, acks)
	return r
}

func (f *fairT) unlock(owner, reqID string, now time.Time) (int, bool) {
	f.t.Helper()
	n, held, acks, err := f.s.FairUnlock(f.ctx, f.rdb, ReplicaSync{}, f.name, owner, reqID, fairLease, now)
	require.NoError(f.t, err)
	assert.Zero(f.t, acks)
	return n, held
}

func (f *fairT) cancel(owner string, now time.Time) {
	f.t.Helper()
	require.NoError(f.t, f.s.FairCancelWait(f.ctx, f.rdb, f.name, owner, "gave-up", fairAllowance, now))
}

func (f *fairT) undo(owner, reqID string, now time.Time) bool {
	f.t.Helper()
	undone, err := f.s.FairUndoAcquire(f.ctx, f.rdb, f.name, owner, reqID, now)
	require.NoError(f.t, err)
	return undone
}

func (f *fairT) queue() []string {
	f.t.Helper()
	q, err := f.rdb.LRange(f.ctx, FairQueueKey(f.name), 0, -1).Result()
	require.NoError(f.t, err)
	return q
}

// deadlines returns the deadline ZSET as owner -> unix ms.
func (f *fairT) deadlines() map[string]int64 {
	f.t.Helper()
	zs, err := f.rdb.ZRangeWithScores(f.ctx, FairTimeoutKey(f.name), 0, -1).Result()
	require.NoError(f.t, err)
	out := make(map[string]int64, len(zs))
	for _, z := range zs {
		out[z.Member.(string)] = int64(z.Score)
	}
	return out
}

// fairAt returns fairNow moved by d.
func fairAt(d time.Duration) time.Time { return fairNow.Add(d) }

// fairSub listens on some channels and collects, in order, what was
// published on them up to a sentinel message, so a test can assert that
// nothing else arrived without waiting for a timeout.
type fairSub struct {
	t        *testing.T
	rdb      *redis.Client
	ps       *redis.PubSub
	sentinel string
}

func newFairSub(t *testing.T, rdb *redis.Client, channels ...string) *fairSub {
	ctx := context.Background()
	sentinel := "fair-test-sentinel"
	all := append(append([]string{}, channels...), sentinel)
	ps := rdb.Subscribe(ctx, all...)
	t.Cleanup(func() { _ = ps.Close() })
	for range all {
		_, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err)
	}
	return &fairSub{t: t, rdb: rdb, ps: ps, sentinel: sentinel}
}

// messages returns "channel=payload" for every message published since the
// last call.
func (s *fairSub) messages() []string {
	s.t.Helper()
	ctx := context.Background()
	require.NoError(s.t, s.rdb.Publish(ctx, s.sentinel, "end").Err())
	var got []string
	for {
		m, err := s.ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(s.t, err)
		msg, ok := m.(*redis.Message)
		if !ok {
			continue
		}
		if msg.Channel == s.sentinel {
			return got
		}
		got = append(got, msg.Channel+"="+msg.Payload)
	}
}

func TestFairKeyNames(t *testing.T) {
	for _, tc := range []struct{ name, owner, queue, timeout, channel string }{
		{"order:42", "u-1:7", "redisson_lock_queue:{order:42}", "redisson_lock_timeout:{order:42}",
			"redisson_lock__channel:{order:42}:u-1:7"},
		{"{tag}:x", "o", "redisson_lock_queue:{tag}:x", "redisson_lock_timeout:{tag}:x",
			"redisson_lock__channel:{tag}:x:o"},
	} {
		assert.Equal(t, tc.queue, FairQueueKey(tc.name))
		assert.Equal(t, tc.timeout, FairTimeoutKey(tc.name))
		assert.Equal(t, tc.channel, FairChannel(tc.name, tc.owner))
		assert.Equal(t, Slot(tc.name), Slot(FairQueueKey(tc.name)), "one cluster slot")
		assert.Equal(t, Slot(tc.name), Slot(FairTimeoutKey(tc.name)))
		assert.Equal(t, Slot(tc.name), Slot(FairChannel(tc.name, tc.owner)))
	}
}

// Redisson's testAcquireFailedTimeoutDrift_Descrete and FIFO admission:
// holder lease 30s, allowance 5s.
func TestFairDeadlineArithmeticAndFIFO(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "fifo")
		require.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, f.acquire("h", "h-1", fairNow, true))

		for i, w := range []string{"w1", "w2", "w3", "w4"} {
			r := f.acquire(w, w+"-1", fairNow, true)
			assert.False(t, r.Acquired, w)
			assert.InDelta(t, float64(fairLease+time.Duration(i)*fairAllowance), float64(r.PTTL), fairSlack, w)
		}
		assert.Equal(t, []string{"w1", "w2", "w3", "w4"}, f.queue())
		dl := f.deadlines()
		assert.InDelta(t, fairNow.UnixMilli()+35000, dl["w1"], 300)
		assert.Equal(t, dl["w1"]+5000, dl["w2"], "deadlines exactly one allowance apart")
		assert.Equal(t, dl["w2"]+5000, dl["w3"])
		assert.Equal(t, dl["w3"]+5000, dl["w4"])

		f.cancel("w2", fairNow)
		assert.Equal(t, []string{"w1", "w3", "w4"}, f.queue())
		assert.Equal(t, map[string]int64{"w1": dl["w1"], "w3": dl["w3"] - 5000, "w4": dl["w4"] - 5000}, f.deadlines(),
			"only the deadlines behind the cancelled waiter move, by one allowance")

		before := f.deadlines()
		for _, w := range []string{"w1", "w3", "w4"} {
			r := f.acquire(w, w+"-2", fairNow, true)
			assert.False(t, r.Acquired, w)
			assert.InDelta(t, float64(fairLease), float64(r.PTTL), fairSlack, "%s already queued: the lock's pttl", w)
		}
		assert.Equal(t, []string{"w1", "w3", "w4"}, f.queue(), "a queued waiter's retry does not queue it again")
		assert.Equal(t, before, f.deadlines())

		n, held := f.unlock("h", "hu-1", fairNow)
		assert.True(t, held)
		assert.Zero(t, n)

		// The lock is free but w1 is first in line: a waiter behind it, queued
		// or not, waits for w1's deadline.
		r := f.acquire("w4", "w4-3", fairNow, true)
		assert.False(t, r.Acquired)
		assert.Equal(t, time.Duration(before["w1"]-fairNow.UnixMilli())*time.Millisecond, r.PTTL)
		r = f.acquire("x", "x-1", fairNow, false)
		assert.False(t, r.Acquired)
		assert.Equal(t, time.Duration(before["w1"]-fairNow.UnixMilli())*time.Millisecond, r.PTTL)
		assert.Equal(t, before, f.deadlines())

		var order []string
		for _, w := range []string{"w1", "w3", "w4"} {
			r := f.acquire(w, w+"-4", fairNow, true)
			require.True(t, r.Acquired, "%s is the head", w)
			order = append(order, w)
			rest := f.queue()
			for _, other := range rest {
				r := f.acquire(other, other+"-5-"+w, fairNow, true)
				assert.False(t, r.Acquired, "%s is behind %s", other, w)
				assert.InDelta(t, float64(fairLease), float64(r.PTTL), fairSlack, "%s waits for %s's lease", other, w)
			}
			if w == "w1" {
				assert.Equal(t, map[string]int64{"w3": before["w3"] - 5000, "w4": before["w4"] - 5000}, f.deadlines(),
					"an acquire pulls every remaining deadline forward by one allowance")
			}
			n, held := f.unlock(w, w+"-u", fairNow)
			assert.True(t, held)
			assert.Zero(t, n)
		}
		assert.Equal(t, []string{"w1", "w3", "w4"}, order)
		assert.Zero(t, rdb.Exists(f.ctx, "fifo", FairQueueKey("fifo"), FairTimeoutKey("fifo")).Val())
	})
}

func TestFairStaleHeadIsEvicted(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "stale")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		require.False(t, f.acquire("b", "b-1", fairNow, true).Acquired)
		dlB := f.deadlines()["b"]
		_, held := f.unlock("h", "hu", fairNow)
		require.True(t, held)

		r := f.acquire("c", "c-1", fairNow, false)
		assert.False(t, r.Acquired, "the lock is free, but b is first in line")
		assert.Equal(t, time.Duration(dlB-fairNow.UnixMilli())*time.Millisecond, r.PTTL)
		r = f.acquire("c", "c-2", fairNow, true)
		assert.False(t, r.Acquired)
		assert.Equal(t, time.Duration(dlB-fairNow.UnixMilli())*time.Millisecond, r.PTTL, "until the tail's deadline")
		assert.Equal(t, []string{"b", "c"}, f.queue())
		assert.Equal(t, map[string]int64{"b": dlB, "c": dlB + 5000}, f.deadlines())

		r = f.acquire("c", "c-3", time.UnixMilli(dlB-1), true)
		assert.False(t, r.Acquired, "b's deadline has not passed")
		assert.Equal(t, time.Millisecond, r.PTTL)

		r = f.acquire("c", "c-4", time.UnixMilli(dlB), true)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r, "b is stale at its deadline: c is next")
		assert.Zero(t, rdb.Exists(f.ctx, FairQueueKey("stale"), FairTimeoutKey("stale")).Val(), "b and c left the queue")
	})
}

func TestFairTryWithoutEnqueueNeverTouchesTheQueue(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "try")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		r := f.acquire("x", "x-1", fairNow, false)
		assert.False(t, r.Acquired)
		assert.InDelta(t, float64(fairLease), float64(r.PTTL), fairSlack)
		assert.Zero(t, rdb.Exists(f.ctx, FairQueueKey("try"), FairTimeoutKey("try")).Val(), "no queue, no deadlines")

		require.False(t, f.acquire("b", "b-1", fairNow, true).Acquired)
		q, dl := f.queue(), f.deadlines()
		r = f.acquire("x", "x-2", fairNow, false)
		assert.False(t, r.Acquired)
		assert.InDelta(t, float64(fairLease), float64(r.PTTL), fairSlack)
		assert.Equal(t, q, f.queue())
		assert.Equal(t, dl, f.deadlines())

		_, held := f.unlock("h", "hu", fairNow)
		require.True(t, held)
		r = f.acquire("x", "x-3", fairNow, false)
		assert.False(t, r.Acquired, "b is first")
		assert.Equal(t, q, f.queue())
		assert.Equal(t, dl, f.deadlines())

		f.cancel("b", fairNow)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, f.acquire("x", "x-4", fairNow, false),
			"tryLock(0) on a free lock with an empty queue succeeds")
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, f.acquire("x", "x-5", fairNow, false), "reentry")
	})
}

func TestFairUnlockWakesOnlyTheHead(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "wake")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		require.Equal(t, 2, f.acquire("h", "h-2", fairNow, true).HoldCount)
		require.False(t, f.acquire("b", "b-1", fairNow, true).Acquired)
		require.False(t, f.acquire("c", "c-1", fairNow, true).Acquired)
		sub := newFairSub(t, rdb, FairChannel("wake", "b"), FairChannel("wake", "c"), LockChannel("wake"))

		n, held := f.unlock("h", "hu-1", fairNow)
		assert.True(t, held)
		assert.Equal(t, 1, n)
		assert.Empty(t, sub.messages(), "a still-held lock publishes nothing")
		assert.InDelta(t, float64(fairLease), float64(rdb.PTTL(f.ctx, "wake").Val()), fairSlack)

		n, held = f.unlock("h", "hu-2", fairNow)
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Equal(t, []string{FairChannel("wake", "b") + "=0"}, sub.messages(), "only the head waiter hears it")

		require.True(t, f.acquire("b", "b-2", fairNow, true).Acquired)
		deleted, err := f.s.FairForceUnlock(f.ctx, rdb, "wake", fairNow)
		require.NoError(t, err)
		assert.True(t, deleted)
		assert.Equal(t, []string{FairChannel("wake", "c") + "=0"}, sub.messages(), "force unlock wakes the new head")
		deleted, err = f.s.FairForceUnlock(f.ctx, rdb, "wake", fairNow)
		require.NoError(t, err)
		assert.False(t, deleted)
		assert.Empty(t, sub.messages())
	})
}

func TestFairCancelWakesTheNextHeadOfAFreeLock(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "cancel")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		for _, w := range []string{"b", "c", "d", "e"} {
			require.False(t, f.acquire(w, w+"-1", fairNow, true).Acquired)
		}
		ch := func(w string) string { return FairChannel("cancel", w) }
		sub := newFairSub(t, rdb, ch("b"), ch("c"), ch("d"), ch("e"), LockChannel("cancel"))

		f.cancel("c", fairNow)
		assert.Empty(t, sub.messages(), "a waiter behind the head leaves silently")
		f.cancel("b", fairNow)
		assert.Empty(t, sub.messages(), "the lock is held: the new head waits for its unlock")
		assert.Equal(t, []string{"d", "e"}, f.queue())
		f.cancel("b", fairNow)
		assert.Equal(t, []string{"d", "e"}, f.queue(), "cancelling twice changes nothing")

		_, held := f.unlock("h", "hu", fairNow)
		require.True(t, held)
		assert.Equal(t, []string{ch("d") + "=0"}, sub.messages())
		f.cancel("d", fairNow)
		assert.Equal(t, []string{"e"}, f.queue())
		assert.Equal(t, []string{ch("e") + "=0"}, sub.messages(),
			"the head left a free lock: the next head is woken rather than sleeping on a stale bound")
	})
}

func TestFairUnlockOfAnExpiredLockSucceeds(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, ff func(time.Duration)) {
		f := newFairT(t, rdb, "expired")
		require.True(t, f.acquireLease("h", "h-1", 100*time.Millisecond, fairNow, true).Acquired)
		require.False(t, f.acquire("b", "b-1", fairNow, true).Acquired)
		sub := newFairSub(t, rdb, FairChannel("expired", "b"), LockChannel("expired"))
		ff(200 * time.Millisecond)
		require.Zero(t, rdb.Exists(f.ctx, "expired").Val())

		n, held := f.unlock("h", "hu-1", fairNow)
		assert.True(t, held, "Redisson's fair lock: a late unlock does not throw")
		assert.Zero(t, n)
		assert.Equal(t, []string{FairChannel("expired", "b") + "=0"}, sub.messages(), "the head waiter is woken")
		n, held = f.unlock("h", "hu-1", fairNow)
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Empty(t, sub.messages(), "a repeated unlock returns the first result and publishes nothing")

		require.True(t, f.acquire("b", "b-2", fairNow, true).Acquired)
		_, held = f.unlock("h", "hu-2", fairNow)
		assert.False(t, held, "held by another owner")
		assert.Equal(t, "1", rdb.HGet(f.ctx, "expired", "b").Val())
	})
}

func TestFairExactlyOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "once")
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, f.acquire("o", "a-1", fairNow, true))
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, f.acquire("o", "a-1", fairNow, true),
			"the same request again: its first result")
		assert.Equal(t, "1", rdb.HGet(f.ctx, "once", "o").Val())
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, f.acquire("o", "a-2", fairNow, true))
		assert.Equal(t, "a-2", rdb.Get(f.ctx, AcquireLatchKey("once", "o")).Val())
		ttl := rdb.PTTL(f.ctx, AcquireLatchKey("once", "o")).Val()
		assert.Greater(t, ttl, time.Duration(0))
		assert.LessOrEqual(t, ttl, LatchTTL)

		n, held := f.unlock("o", "u-1", fairNow)
		assert.True(t, held)
		assert.Equal(t, 1, n)
		n, held = f.unlock("o", "u-1", fairNow)
		assert.True(t, held)
		assert.Equal(t, 1, n, "a retried unlock releases nothing more")
		assert.Equal(t, "1", rdb.HGet(f.ctx, "once", "o").Val())
		n, held = f.unlock("o", "u-2", fairNow)
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Zero(t, rdb.Exists(f.ctx, "once", AcquireLatchKey("once", "o")).Val(), "lock and acquire latch deleted")
		n, held = f.unlock("o", "u-2", fairNow)
		assert.True(t, held)
		assert.Zero(t, n)
		ttl = rdb.PTTL(f.ctx, UnlockRecordKey("once", f.s.token)).Val()
		assert.Greater(t, ttl, time.Duration(0))
		assert.LessOrEqual(t, ttl, LatchTTL)
	})
}

func TestFairUndoAcquire(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "undo")
		require.True(t, f.acquire("h", "a-1", fairNow, true).Acquired)
		require.False(t, f.acquire("b", "b-1", fairNow, true).Acquired)
		sub := newFairSub(t, rdb, FairChannel("undo", "b"), LockChannel("undo"))
		assert.True(t, f.undo("h", "a-1", fairNow), "the applied acquire is undone")
		assert.Zero(t, rdb.Exists(f.ctx, "undo").Val())
		assert.Equal(t, []string{FairChannel("undo", "b") + "=0"}, sub.messages(), "the freed lock wakes the head")
		assert.False(t, f.undo("h", "a-1", fairNow), "undo is itself applied once")
		assert.Equal(t, []string{"b"}, f.queue())

		require.True(t, f.acquire("b", "b-2", fairNow, true).Acquired)
		require.Equal(t, 2, f.acquire("b", "b-3", fairNow, true).HoldCount)
		assert.False(t, f.undo("b", "b-2", fairNow), "only the last applied request can be undone")
		assert.True(t, f.undo("b", "b-3", fairNow))
		assert.Equal(t, "1", rdb.HGet(f.ctx, "undo", "b").Val())
		assert.Empty(t, sub.messages(), "still held: nothing published")
	})
}

func TestFairUndoRemovesAGhostWaiter(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "ghost")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		for _, w := range []string{"w1", "g", "w3"} {
			require.False(t, f.acquire(w, w+"-1", fairNow, true).Acquired, "%s refused and queued, its reply lost", w)
		}
		dl := f.deadlines()

		assert.False(t, f.undo("g", "g-1", fairNow), "never applied: nothing to undo")
		assert.Equal(t, []string{"w1", "w3"}, f.queue(), "but no ghost waiter is left behind")
		assert.Equal(t, map[string]int64{"w1": dl["w1"], "w3": dl["w3"] - 5000}, f.deadlines(),
			"the waiter behind moves forward by the ghost's allowance")

		sub := newFairSub(t, rdb, FairChannel("ghost", "w3"))
		assert.False(t, f.undo("w1", "w1-1", fairNow))
		assert.Equal(t, []string{"w3"}, f.queue())
		pttl := rdb.PTTL(f.ctx, "ghost").Val().Milliseconds()
		assert.InDelta(t, fairNow.UnixMilli()+pttl+5000, f.deadlines()["w3"], 300,
			"a ghost head: the next waiter's deadline is the lock's expiry plus its allowance")
		assert.Empty(t, sub.messages(), "the lock is held: no wake-up")
		assert.Equal(t, "1", rdb.HGet(f.ctx, "ghost", "h").Val(), "the holder is untouched")
	})
}

// Redisson's testWaitTimeoutDrift family (#1104): churn never lets a
// deadline grow past now + lease + allowance × position.
func TestFairNoDeadlineDriftAfterChurn(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newFairT(t, rdb, "drift")
		require.True(t, f.acquire("h", "h-1", fairNow, true).Acquired)
		require.False(t, f.acquire("p1", "p1-1", fairNow, true).Acquired)
		require.False(t, f.acquire("p2", "p2-1", fairNow, true).Acquired)
		start := f.deadlines()

		bounded := func(now time.Time) {
			t.Helper()
			dl := f.deadlines()
			for i, w := range f.queue() {
				bound := now.UnixMilli() + fairLease.Milliseconds() + int64(i+1)*fairAllowance.Milliseconds()
				assert.LessOrEqual(t, dl[w], bound, "%s at position %d", w, i+1)
			}
		}
		for i := range 50 {
			now := fairAt(time.Duration(i) * 10 * time.Millisecond)
			a, b := "f"+strconv.Itoa(i), "g"+strconv.Itoa(i)
			require.False(t, f.acquire(a, a, now, true).Acquired)
			require.False(t, f.acquire(b, b, now, true).Acquired)
			bounded(now)
			if i%2 == 0 {
				f.cancel(a, now) // the middle one first: b moves forward
				bounded(now)
				f.cancel(b, now)
			} else {
				f.cancel(b, now)
				assert.False(t, f.undo(a, "lost", now), "a ghost of a lost reply")
			}
			bounded(now)
		}
		assert.Equal(t, []string{"p1", "p2"}, f.queue())
		assert.Equal(t, start, f.deadlines(), "the survivors' deadlines moved neither way")
	})
}

func TestFairBadArgumentsWriteNothing(t *testing.T) {
	msBad := []string{"0", "-1", "1.5", "1e3", "", " 5", "abc", "9007199254740993"}
	nowBad := []string{"-1", "1.5", "", "x", " 5", "9007199254740993"}
	pubBad := []string{"flushall", "PUBLISH", ""}
	type call struct {
		name string
		run  func(ctx context.Context, rdb *redis.Client, args []any) error
		args []any
		bad  map[int][]string
	}
	k := func(name string) []string { return fairKeys(name) }
	calls := []call{
		{"acquire", func(ctx context.Context, rdb *redis.Client, args []any) error {
			return fairAcquireScript.Run(ctx, rdb, []string{"b", FairQueueKey("b"), FairTimeoutKey("b"), AcquireLatchKey("b", "o"),
				GaveUpKey("b", "o"), FairPlacesKey("b")}, args...).Err()
		}, []any{"o", "1000", "r", "1000", "1000", "100", "1", "1000"},
			map[int][]string{0: {""}, 1: msBad, 2: {""}, 3: msBad, 4: msBad, 5: nowBad, 6: {"2", "", "true"},
				7: {"-1", "1.5", "1e3", "", " 5", "abc", "9007199254740993"}}},
		{"unlock", func(ctx context.Context, rdb *redis.Client, args []any) error {
			return fairUnlockScript.Run(ctx, rdb, append(k("b"), UnlockRecordKey("b", "t"), AcquireLatchKey("b", "o"), FairPlacesKey("b")), args...).Err()
		}, []any{"o", "1000", "100", "publish", "1000", "1", "u"},
			map[int][]string{0: {""}, 1: msBad, 2: nowBad, 3: pubBad, 4: msBad, 5: msBad, 6: {""}}},
		{"undo", func(ctx context.Context, rdb *redis.Client, args []any) error {
			return fairUndoScript.Run(ctx, rdb, append(k("b"), AcquireLatchKey("b", "o"), FairPlacesKey("b")), args...).Err()
		}, []any{"o", "r", "100", "publish"},
			map[int][]string{0: {""}, 1: {""}, 2: nowBad, 3: pubBad}},
		{"forceunlock", func(ctx context.Context, rdb *redis.Client, args []any) error {
			return fairForceUnlockScript.Run(ctx, rdb, append(k("b"), FairPlacesKey("b")), args...).Err()
		}, []any{"100", "publish"},
			map[int][]string{0: nowBad, 1: pubBad}},
		{"cancel", func(ctx context.Context, rdb *redis.Client, args []any) error {
			return fairCancelScript.Run(ctx, rdb, append(k("b"), GaveUpKey("b", "o"), FairPlacesKey("b")), args...).Err()
		}, []any{"o", "1000", "100", "publish", "r", "1000"},
			map[int][]string{0: {""}, 1: msBad, 2: nowBad, 3: pubBad, 4: {""}, 5: msBad}},
	}
	runBad := func(t *testing.T, ctx context.Context, rdb *redis.Client) {
		for _, c := range calls {
			for i, bads := range c.bad {
				for _, bad := range bads {
					args := append([]any{}, c.args...)
					args[i] = bad
					assert.Error(t, c.run(ctx, rdb, args), "%s arg %d = %q", c.name, i+1, bad)
				}
			}
		}
	}
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		runBad(t, ctx, rdb)
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call wrote a key")

		// A stale head (deadline 1) that any valid call would drop first.
		require.NoError(t, rdb.RPush(ctx, FairQueueKey("b"), "stale").Err())
		require.NoError(t, rdb.ZAdd(ctx, FairTimeoutKey("b"), redis.Z{Score: 1, Member: "stale"}).Err())
		runBad(t, ctx, rdb)
		assert.Equal(t, []string{"stale"}, rdb.LRange(ctx, FairQueueKey("b"), 0, -1).Val(), "no bad call dropped the stale head")
		assert.Equal(t, int64(2), rdb.DBSize(ctx).Val())

		s := newScripts(t)
		_, _, err := s.FairAcquire(ctx, rdb, ReplicaSync{}, "b", "o", "r", time.Second, time.Second, 0, time.UnixMilli(-1), true)
		assert.Error(t, err, "a clock before 1970")
		assert.Error(t, s.FairCancelWait(ctx, rdb, "b", "o", "r", time.Second, time.UnixMilli(-1)))
		assert.Equal(t, int64(2), rdb.DBSize(ctx).Val())

		for _, c := range calls {
			assert.NoError(t, c.run(ctx, rdb, c.args), "%s with valid arguments", c.name)
		}
		assert.Empty(t, rdb.LRange(ctx, FairQueueKey("b"), 0, -1).Val(), "a valid call drops the stale head")
	})
}

// An attempt that reaches Redis after its waiter gave up its place (it
// was in flight) is refused and does not queue the owner again; a new
// request of the same owner queues as usual.
func TestFairAttemptAfterGiveUpIsNotQueued(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		now := time.Now()
		_, err := s.lockAcquire(ctx, rdb, "g", "holder", "h1", time.Minute) // a plain hold keeps the fair lock busy
		require.NoError(t, err)
		res, _, err := s.FairAcquire(ctx, rdb, ReplicaSync{}, "g", "w", "w1", time.Minute, time.Minute, 0, now, true)
		require.NoError(t, err)
		require.False(t, res.Acquired)
		require.Equal(t, []string{"w"}, rdb.LRange(ctx, FairQueueKey("g"), 0, -1).Val())

		require.NoError(t, s.FairCancelWait(ctx, rdb, "g", "w", "w1", time.Minute, now))
		assert.Empty(t, rdb.LRange(ctx, FairQueueKey("g"), 0, -1).Val())
		res, _, err = s.FairAcquire(ctx, rdb, ReplicaSync{}, "g", "w", "w1", time.Minute, time.Minute, 0, now, true)
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.Empty(t, rdb.LRange(ctx, FairQueueKey("g"), 0, -1).Val(), "the late attempt did not queue it again")

		res, _, err = s.FairAcquire(ctx, rdb, ReplicaSync{}, "g", "w", "w2", time.Minute, time.Minute, 0, now, true)
		require.NoError(t, err)
		assert.False(t, res.Acquired)
		assert.Equal(t, []string{"w"}, rdb.LRange(ctx, FairQueueKey("g"), 0, -1).Val(), "a new request queues")
	})
}
