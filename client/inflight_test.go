package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/faultproxy"
	"github.com/warden-go/warden/redisio"
)

// A lock held with an explicit lease whose owner takes it again while the
// network is slow: the reentry reaches Redis before the lease ends (and
// refreshes it there), but its answer comes back after. The owner is told
// at the lease's end, not when the answer comes (no other process may
// take a lock its holder still believes held), the reentry fails with
// ErrLockLost, and the holds Redis kept are given back rather than left to
// the refreshed lease.
func TestLeaseEndingDuringAReentryIsToldAtItsEnd(t *testing.T) {
	e := realEnv(t)
	c, p := slowClient(t, e)
	ctx := testCtx(t)
	const (
		name    = "inflight-reentry"
		lease   = time.Second
		latency = 200 * time.Millisecond // each way
	)
	p.SetLatency(latency)

	l := c.Lock(name)
	start := time.Now()
	require.NoError(t, l.LockLease(ctx, lease))
	require.Less(t, time.Since(start), 700*time.Millisecond, "the first acquire took one round trip (400 ms)")
	lost := l.Lost()
	toldAt := make(chan time.Duration, 1)
	go func() {
		select {
		case <-lost:
			toldAt <- time.Since(start)
		case <-time.After(10 * time.Second): // the test fails below; the goroutine ends
		}
	}()
	// Sent 750 ms after the first acquire: it reaches Redis at about
	// 950 ms, before Redis's expiry (1,200 ms), and its answer comes at
	// about 1,150 ms, after the lease the engine counts from the first
	// acquire's send (1,000 ms).
	time.Sleep(time.Until(start.Add(750 * time.Millisecond)))
	err := l.LockLease(ctx, lease)
	answered := time.Since(start)
	require.ErrorIs(t, err, client.ErrLockLost, "the reentry answered after the lease ended")

	select {
	case <-lost:
	default:
		t.Fatal("the owner was not told before the reentry's answer came")
	}
	told := await.Value(t, toldAt, time.Second, "the time the owner was told")
	assert.Less(t, told, lease+150*time.Millisecond, "told when the lease ran out")
	p.SetLatency(0)
	given := time.Now()
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 },
		"the holds Redis kept are given back")
	freed := time.Since(start)
	t.Logf("owner told %v and reentry answered %v after the first acquire; holds given back %v after the latency was removed (lock gone at %v; the refreshed lease would have kept it until about %v)",
		told.Round(time.Millisecond), answered.Round(time.Millisecond), time.Since(given).Round(time.Millisecond), freed.Round(time.Millisecond),
		(750*time.Millisecond + latency + lease).Round(time.Millisecond))
	assert.Less(t, freed, 750*time.Millisecond+latency+lease, "freed before the refreshed lease ran out")

	other := e.newClient(t).Lock(name)
	require.True(t, tryLock(t, other), "another client takes the lock")
	require.NoError(t, other.Unlock(ctx))
}

// A reentry with a shorter lease that fails without an answer (the link
// cut) may or may not have set that lease: the owner is told when the
// shorter one would end, and the holds Redis may still keep at the longer
// lease are given back then, so the lock is not left held by an owner
// told it lost it (a later acquire of the same owner would otherwise
// count them as its own).
func TestFailedReentryThatMayHaveShortenedTheLease(t *testing.T) {
	e := realEnv(t)
	p := faultproxy.New(t, e.srv.Addr())
	cut := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = cut.Close() })
	c := (&env{name: "cut", rdb: cut, srv: e.srv, clk: e.clk}).newClient(t)
	ctx := testCtx(t)
	const name = "failed-reentry"

	l := c.Lock(name)
	require.NoError(t, l.LockLease(ctx, 20*time.Second))
	lost := l.Lost()
	p.Block(true)
	start := time.Now()
	require.Error(t, l.LockLease(ctx, time.Second), "the reentry's link is cut")
	p.Block(false)
	select {
	case <-lost:
		t.Fatal("told before the shorter lease could have ended")
	default:
	}
	assert.Equal(t, int64(1), e.rdb.Exists(ctx, name).Val(), "Redis still has the first hold (20 s lease)")
	await.Value(t, lost, 3*time.Second, "told at the shorter lease's end")
	told := time.Since(start)
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 },
		"the hold the owner was told it lost is given back")
	t.Logf("told %v after the failed reentry; the lock was gone %v after it", told.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
	assert.Less(t, told, 1500*time.Millisecond, "told when the shorter lease would end")

	require.NoError(t, l.Lock(ctx))
	n, err := l.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a fresh hold, not merged with the one given back")
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "free after one unlock")
}

// A lease shorter than the acquire's round trip runs out before the
// answer comes: another process may hold the lock by then, so the owner
// is not handed it. The acquire fails with ErrLockLost, the owner holds
// nothing, and the hold Redis took is given back.
func TestLeaseShorterThanTheAcquiresRoundTrip(t *testing.T) {
	e := realEnv(t)
	c, p := slowClient(t, e)
	ctx := testCtx(t)
	const (
		name    = "lease-under-round-trip"
		lease   = 300 * time.Millisecond
		latency = 200 * time.Millisecond // each way
	)
	p.SetLatency(latency)

	l := c.Lock(name)
	start := time.Now()
	err := l.LockLease(ctx, lease)
	took := time.Since(start)
	require.ErrorIs(t, err, client.ErrLockLost, "the lease ran out before the answer came")
	assert.Less(t, took, 2*time.Second, "answered after one round trip, not retried")
	ok, err := l.TryLockWait(ctx, 0, lease)
	require.ErrorIs(t, err, client.ErrLockLost, "a try alike")
	assert.False(t, ok)
	p.SetLatency(0)
	// The try's hold is given back through the slow link; wait for it.
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 }, "the lock is free again")
	assert.Zero(t, get(t, l.HoldCount), "the owner holds nothing")

	other := e.newClient(t).Lock(name)
	require.True(t, tryLock(t, other), "another client takes the lock")
	require.NoError(t, other.Unlock(ctx))
	require.NoError(t, l.LockLease(ctx, lease), "with the latency gone, the same lease is enough")
	require.NoError(t, l.Unlock(ctx))
	t.Logf("the acquire answered ErrLockLost %v after it was sent (lease %v, %v each way)", took.Round(time.Millisecond), lease, latency)
}

// slowClient returns a client whose every connection goes through a fault
// proxy (to set latency on), warmed up (its connection, the lock and
// read/write lock scripts) so that each of its calls takes one round trip.
func slowClient(t *testing.T, e *env) (*client.Client, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.New(t, e.srv.Addr())
	slow := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = slow.Close() })
	c := (&env{name: "slow", rdb: slow, srv: e.srv, clk: e.clk}).newClient(t)
	lock := c.Lock("warm-lock")
	require.NoError(t, lock.LockLease(context.Background(), time.Second))
	require.NoError(t, lock.Unlock(context.Background()))
	warm := c.ReadWriteLock("warm")
	require.NoError(t, warm.ReadLock().LockLease(context.Background(), time.Second))
	require.NoError(t, warm.ReadLock().Unlock(context.Background()))
	require.NoError(t, warm.WriteLock().LockLease(context.Background(), time.Second))
	require.NoError(t, warm.WriteLock().Unlock(context.Background()))
	return c, p
}

// A read reentry sent just before its holding's lease ends reaches Redis
// after the lock expired, where it is a first acquire. Its owner was told
// the old holding ended; the answer is a new holding, and nothing the
// engine gives back for the old one may release it.
func TestReentryRunAfterItsHoldingEndedIsANewHolding(t *testing.T) {
	e := realEnv(t)
	c, p := slowClient(t, e)
	ctx := testCtx(t)
	const name = "reentry-after-end"
	read := c.ReadWriteLock(name).ReadLock()
	start := time.Now()
	require.NoError(t, read.LockLease(ctx, time.Second))
	first := read.Lost()
	time.Sleep(time.Until(start.Add(850 * time.Millisecond)))
	p.SetLatency(300 * time.Millisecond) // reaches Redis at about 1,150 ms, after the lock expired
	require.NoError(t, read.LockLease(ctx, 10*time.Second), "a first acquire in Redis's eyes")
	select {
	case <-first:
	default:
		t.Fatal("the first holding's end was not told")
	}
	p.SetLatency(0)
	lost := read.Lost()
	time.Sleep(1500 * time.Millisecond) // anything queued for the old holding has run
	assert.EqualValues(t, 1, get(t, read.HoldCount), "the new holding is held")
	select {
	case <-lost:
		t.Fatal("the new holding was reported lost")
	default:
	}
	assert.False(t, tryLock(t, e.newClient(t).ReadWriteLock(name).WriteLock()), "another process cannot write while the new read holding lives")
	require.NoError(t, read.Unlock(ctx))
}

// A reentry whose holding ended while it was in flight, run by Redis as a
// first acquire with a lease shorter than what is left of the round trip:
// that lease too ran out before the answer came, so it fails with
// ErrLockLost rather than answer "acquired".
func TestReentryRunAfterItsHoldingEndedWithALeaseUnderTheRoundTrip(t *testing.T) {
	e := realEnv(t)
	c, p := slowClient(t, e)
	ctx := testCtx(t)
	const name = "reentry-after-end-short"
	l := c.Lock(name)
	start := time.Now()
	require.NoError(t, l.LockLease(ctx, time.Second))
	time.Sleep(time.Until(start.Add(850 * time.Millisecond)))
	p.SetLatency(300 * time.Millisecond)
	err := l.LockLease(ctx, 200*time.Millisecond) // reaches Redis at about 1,150 ms, answered at about 1,450
	require.ErrorIs(t, err, client.ErrLockLost)
	p.SetLatency(0)
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 }, "nothing is held")
}

// A write hold whose lease ends under its owner's longer read hold (a
// downgrade): the owner is told, and the write hold is given back, so the
// lock goes to read mode and other readers share it, instead of staying
// write-held as long as the read hold keeps the hash.
func TestWriteHoldEndingUnderItsOwnersReadIsGivenBack(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "write-ends-under-read"
	rw := e.newClient(t).ReadWriteLock(name)
	require.NoError(t, rw.WriteLock().LockLease(ctx, 2*time.Second))
	require.NoError(t, rw.WriteLock().LockLease(ctx, 2*time.Second))
	require.NoError(t, rw.ReadLock().LockLease(ctx, 10*time.Second))
	lost := rw.WriteLock().Lost()
	require.NoError(t, rw.WriteLock().Unlock(ctx)) // one write hold left, its lease 2 s from now
	await.Value(t, lost, 5*time.Second, "the write hold's end told")
	eventually(t, time.Second, func() bool { return e.rdb.HGet(ctx, name, "mode").Val() == "read" },
		"the write hold is given back: read mode")
	assert.False(t, e.rdb.HExists(ctx, name, redisio.WriteField(rw.WriteLock().Owner())).Val(), "no write field left")
	other := e.newClient(t).ReadWriteLock(name).ReadLock()
	assert.True(t, tryLock(t, other), "another process reads")
	require.NoError(t, other.Unlock(ctx))
	require.NoError(t, rw.ReadLock().Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "free after the read unlocks")
}

// A reentry that finds its holding gone from Redis (the key deleted, as
// an expiry or a force-unlock nobody here saw would leave it) is run by
// Redis as a first acquire: the owner is told the old holding was lost,
// and the answer is a new holding of one hold, for every kind whose
// holding is one count in Redis (a read lock's holds each keep a lease).
func TestReentryThatFindsItsHoldingGoneTellsItsLoss(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	for kind, l := range map[string]interface {
		Lock(context.Context) error
		Unlock(context.Context) error
		Lost() <-chan struct{}
		HoldCount(context.Context) (int, error)
	}{"lock": c.Lock("gone:lock"), "fenced": c.FencedLock("gone:fenced"), "fair": c.FairLock("gone:fair"),
		"spin": c.SpinLock("gone:spin"), "group": c.GroupLock("gone:group", "x", "y"),
		"write": c.ReadWriteLock("gone:write").WriteLock()} {
		t.Run(kind, func(t *testing.T) {
			name := "gone:" + kind
			require.NoError(t, l.Lock(ctx))
			first := l.Lost()
			require.NoError(t, e.rdb.Del(ctx, name).Err())
			require.NoError(t, l.Lock(ctx), "taken afresh")
			assert.True(t, isClosed(first), "the holding gone from Redis is told lost")
			assert.Equal(t, 1, get(t, l.HoldCount), "the new holding has one hold")
			assert.False(t, isClosed(l.Lost()), "the new holding is not lost")
			require.NoError(t, l.Unlock(ctx))
			assert.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld, "one hold, released")
			assert.Zero(t, e.rdb.Exists(ctx, name).Val())
		})
	}
}
