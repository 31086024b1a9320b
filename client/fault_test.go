package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/faultproxy"
	"github.com/warden-go/warden/internal/redisproc"
	"github.com/warden-go/warden/internal/redistest"
)

// proxied returns an env whose client reaches real Redis through a fault
// proxy, with every connection the client needs already open and the
// scripts loaded, so an armed fault hits the next command.
func proxied(t *testing.T) (*env, *client.Client, *faultproxy.Proxy) {
	e := realEnv(t)
	p := faultproxy.New(t, e.srv.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	pe := &env{name: "proxied", rdb: rdb, srv: e.srv, clk: e.clk}
	c := pe.newClient(t)
	ctx := testCtx(t)
	warm := c.Lock("warm-up")
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))
	eventually(t, 2*time.Second, func() bool { return p.Conns() >= 2 }, "command and pub/sub connections open")
	require.True(t, p.Quiet(50*time.Millisecond, 5*time.Second), "their handshakes through, so a drop hits the test's command")
	// Checks go straight to Redis, not through the proxy.
	pe.rdb = e.rdb
	return pe, c, p
}

// scriptRuns is how many scripts Redis has run (EVALSHA and EVAL).
func scriptRuns(t testing.TB, rdb *redis.Client) int64 {
	t.Helper()
	var n int64
	for name, rest := range redisproc.InfoFields(rdb.Info(context.Background(), "commandstats").Val()) {
		if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
			calls, _, err := redisproc.CommandStat(rest)
			require.NoError(t, err)
			n += int64(calls)
		}
	}
	return n
}

// faulted runs op with the next reply dropped and checks that Redis ran the
// script twice: the fault hit op's own script, and go-redis retried it.
func faulted(t *testing.T, e *env, p *faultproxy.Proxy, op func() error) error {
	t.Helper()
	before := scriptRuns(t, e.rdb)
	p.DropNextReply()
	err := op()
	require.Equal(t, int64(2), scriptRuns(t, e.rdb)-before, "the script ran, its reply was lost, go-redis sent it again")
	return err
}

func TestAcquireIsAppliedOnceWhenItsReplyIsLost(t *testing.T) {
	e, c, p := proxied(t)
	ctx := testCtx(t)
	l := c.Lock("once")

	// Fixed leases: no renewal traffic that a dropped reply could hit instead.
	require.NoError(t, faulted(t, e, p, func() error { return l.LockLease(ctx, time.Minute) }))
	assert.Equal(t, "1", e.rdb.HGet(ctx, "once", l.Owner()).Val(), "one acquire, one hold")

	require.NoError(t, faulted(t, e, p, func() error { return l.LockLease(ctx, time.Minute) }), "a reentry under the same fault")
	assert.Equal(t, "2", e.rdb.HGet(ctx, "once", l.Owner()).Val())

	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "once").Val(), "two unlocks free it: no phantom hold")
}

func TestRetriedUnlockReturnsTheFirstResult(t *testing.T) {
	e, c, p := proxied(t)
	ctx := testCtx(t)
	l := c.Lock("unlock-once")
	require.NoError(t, l.LockLease(ctx, time.Minute))
	require.NoError(t, l.LockLease(ctx, time.Minute))

	require.NoError(t, faulted(t, e, p, func() error { return l.Unlock(ctx) }), "the retry sees the first run's result")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "unlock-once", l.Owner()).Val(), "released once, not twice")

	require.NoError(t, faulted(t, e, p, func() error { return l.Unlock(ctx) }), "not ErrNotHeld: the retry returns the first result")
	assert.Zero(t, e.rdb.Exists(ctx, "unlock-once").Val())
}

// An acquire that ran in Redis but whose reply timed out is "maybe
// acquired": the engine undoes it if it was applied, and reports the error.
func TestTimedOutAcquireIsUndone(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	ctx := testCtx(t)
	var once atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Acquires() && once.CompareAndSwap(false, true) {
			sc.Run()                                          // applied in Redis...
			return redistest.Failed(context.DeadlineExceeded) // ...but the reply timed out
		}
		return sc.Run()
	})
	l := c.Lock("maybe")
	require.ErrorIs(t, l.LockLease(ctx, time.Minute), context.DeadlineExceeded)
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "maybe").Val() == 0 },
		"the applied acquire was undone")
	require.NoError(t, l.LockLease(ctx, time.Minute), "and the lock is free")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "maybe", l.Owner()).Val())
	require.NoError(t, l.Unlock(ctx))
}

// A caller whose context ends while its own script call is held before
// Redis returns at once: the engine, not the caller's goroutine, waits for
// the call (up to redisio.IOTimeout, 10 s). Once the call is let through,
// the engine settles what it did: the acquire it applied is given back,
// the unlock stays applied.
func TestContextEndingDuringAStalledCallReturnsAtOnce(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	ctx := testCtx(t)
	var gate atomic.Pointer[chan struct{}]
	entered := make(chan struct{}, 1)
	ran := make(chan *redis.Cmd, 1)
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		g := gate.Load()
		if g == nil || len(sc.Keys) == 0 || sc.Keys[0] != "stalled" {
			return sc.Run()
		}
		select {
		case entered <- struct{}{}:
		default:
		}
		<-*g
		r := sc.Run()
		select {
		case ran <- r:
		default:
		}
		return r
	})
	// stalled runs call with its lock's script calls held from now until
	// the returned func lets them through, cancels call's context once its
	// call is held, and returns what call returned.
	stalled := func(call func(context.Context) error) (func(), error) {
		g := make(chan struct{})
		gate.Store(&g)
		var opened sync.Once
		release := func() { opened.Do(func() { gate.Store(nil); close(g) }) }
		t.Cleanup(release) // a caller that does not return fails the test, not hangs it
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- call(cctx) }()
		await.Value(t, entered, 5*time.Second, "the call reaching Redis")
		cancel()
		err := await.Value(t, done, time.Second, "the caller's return once its context ended")
		return release, err
	}

	l := c.Lock("stalled")
	release, err := stalled(func(ctx context.Context) error { return l.LockLease(ctx, time.Minute) })
	require.ErrorIs(t, err, client.ErrNotObtained)
	require.ErrorIs(t, err, context.Canceled)
	release()
	r := await.Value(t, ran, 5*time.Second, "the held acquire running")
	require.NoError(t, r.Err())
	assert.Equal(t, []any{int64(1), int64(1)}, r.Val(), "the acquire took the lock after its caller had left")
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "stalled").Val() == 0 },
		"and the engine gave it back")
	other := e.newClient(t).Lock("stalled")
	ok, err := other.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "another Client takes the lock")
	require.NoError(t, other.Unlock(ctx))

	require.NoError(t, l.LockLease(ctx, time.Minute))
	release, err = stalled(l.Unlock)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "outcome unknown")
	release()
	r = await.Value(t, ran, 5*time.Second, "the held unlock running")
	require.NoError(t, r.Err())
	assert.Equal(t, int64(0), r.Val(), "the unlock released the last hold after its caller had left")
	assert.Zero(t, e.rdb.Exists(ctx, "stalled").Val())
	ok, err = other.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "another Client takes the lock")
	require.NoError(t, other.Unlock(ctx))
}

func TestRedisRestartWhileHeldTellsTheOwner(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	l := c.Lock("restarted")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()

	e.srv.Restart(t) // persistence is off: the lock is gone
	await.Value(t, lost, 3*watchdog, "Lost() after Redis lost the lock")
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)

	// A new holding of the same name is renewed and unlocks cleanly.
	again := c.Lock("restarted")
	require.NoError(t, again.Lock(ctx))
	e.advance(2*watchdog + watchdog/2)
	held, err := again.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "renewed after the restart")
	select {
	case <-again.Lost():
		t.Fatal("the new holding reported lost")
	default:
	}
	require.NoError(t, again.Unlock(ctx))
}

// A watchdog-mode holder is told its lock is lost once no renewal has
// succeeded for a whole watchdog timeout, even while Redis cannot be
// reached to confirm it.
func TestUnrenewableLockIsReportedLost(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	l := c.Lock("unreachable")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()
	e.advance(watchdog / 2) // renewed at least once while Redis is up
	select {
	case <-lost:
		t.Fatal("reported lost while renewals succeed")
	default:
	}
	stopped := time.Now()
	e.srv.Stop(t)
	await.Value(t, lost, 3*watchdog, "Lost() while Redis is unreachable")
	assert.GreaterOrEqual(t, time.Since(stopped), watchdog/3, "not before the renewals had a chance")
	e.srv.Start(t)
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)
}

func TestRedisDownFailsPromptly(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	l := c.Lock("down")
	e.srv.Stop(t)
	start := time.Now()
	ok, err := l.TryLockWait(ctx, 5*time.Second, 10*time.Second)
	assert.False(t, ok)
	require.Error(t, err, "a Redis error, never a plain false")
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = l.IsLocked(ctx)
	require.Error(t, err)

	e.srv.Start(t)
	eventually(t, 5*time.Second, func() bool {
		ok, err := l.TryLock(ctx)
		return err == nil && ok
	}, "works again once Redis is back")
	require.NoError(t, l.Unlock(ctx))
}

func TestWaiterRetriesAfterPubSubReconnect(t *testing.T) {
	e, c, p := proxied(t)
	ctx := testCtx(t)
	holder := e.newClient(t).Lock("reconnect")
	require.NoError(t, holder.LockLease(ctx, 20*time.Second))
	waiter := c.Lock("reconnect")
	done := make(chan error, 1)
	attempts := scriptRuns(t, e.rdb)
	go func() { done <- waiter.Lock(ctx) }()
	eventually(t, 2*time.Second, func() bool {
		return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 1
	}, "waiting")
	// Its attempt after subscribing has been refused: the unlock below
	// comes after it, so only the reconnect can let the waiter in.
	eventually(t, 2*time.Second, func() bool { return scriptRuns(t, e.rdb)-attempts >= 2 }, "tried again once subscribed")
	// Cut the waiter's connections and unlock while they are down: the
	// unlock message is lost, the lease is long, yet the waiter gets in
	// soon after its pub/sub connection is back.
	p.Block(true)
	require.NoError(t, holder.Unlock(ctx))
	time.Sleep(100 * time.Millisecond)
	p.Block(false)
	require.NoError(t, await.Value(t, done, 5*time.Second, "the waiter, retried after the pub/sub reconnect"))
	require.NoError(t, waiter.Unlock(ctx))
}
