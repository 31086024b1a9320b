package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/redisio"
)

// hookedEnv is a real-Redis env whose client's script calls pass through a
// hook, with the scripts preloaded so each call is one EVALSHA.
func hookedEnv(t *testing.T, clk clockwork.Clock) (*env, *redistest.Hooked) {
	e := realEnv(t)
	scripts, err := redisio.NewScripts("publish")
	require.NoError(t, err)
	require.NoError(t, scripts.Load(context.Background(), e.rdb))
	h := redistest.NewHooked(e.rdb)
	e.hooked, e.clk = h, clk
	return e, h
}

// A reentrant acquire that races its own cancel gives its hold back, but
// the outer holding keeps its Lost() channel.
func TestCancelledReentryKeepsTheOuterHoldingWatched(t *testing.T) {
	fake := clockwork.NewFakeClock()
	e, h := hookedEnv(t, fake)
	c := e.newClient(t)
	ctx := testCtx(t)
	l := c.Lock("R")
	require.NoError(t, l.LockLease(ctx, time.Minute))
	lost := l.Lost()

	rctx, cancel := context.WithCancel(ctx)
	var calls atomic.Int32
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Acquires() && calls.Add(1) == 1 {
			r := sc.Run()
			cancel() // the caller gives up while the reentry is applied
			// The caller sees its context end well before this reply: on
			// a loaded machine both could be ready together, and a select
			// picks either.
			time.Sleep(50 * time.Millisecond)
			return r
		}
		return sc.Run()
	})
	require.ErrorIs(t, l.LockLease(rctx, time.Minute), client.ErrNotObtained)
	eventually(t, time.Second, func() bool { n, _ := l.HoldCount(ctx); return n == 1 }, "the reentry was given back")

	blockUntil(t, fake, 1)
	fake.Advance(61 * time.Second) // the outer holding's lease runs out
	await.Value(t, lost, 2*time.Second, "the outer holding's Lost(), not detached by the cancelled reentry")
}

// A Lock whose Redis call is in flight when the client closes reports
// ErrClosed, not a context error the caller could take for its own.
func TestCloseDuringAnAcquireInFlightReportsErrClosed(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	inflight := make(chan struct{})
	var once atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Acquires() && once.CompareAndSwap(false, true) {
			close(inflight)
			time.Sleep(200 * time.Millisecond) // a slow Redis
		}
		return sc.Run()
	})
	errc := make(chan error, 1)
	go func() { errc <- c.Lock("C").Lock(context.Background()) }()
	await.Value(t, inflight, 5*time.Second, "the acquire in flight")
	e.close(t, c)
	require.ErrorIs(t, await.Value(t, errc, 5*time.Second, "Lock's return"), client.ErrClosed)
}

// A first acquire that succeeds in Redis just as its caller's context ends
// is released by the engine: the caller gets ErrNotObtained and the lock is
// free, with no goroutine left behind.
func TestAcquireThatRacedItsCancelIsReleased(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	ctx := testCtx(t)
	l := c.Lock("raced")
	require.NoError(t, l.LockLease(ctx, time.Minute)) // warm up: key actor, pools
	require.NoError(t, l.Unlock(ctx))
	before := countGoroutines()

	rctx, cancel := context.WithCancel(ctx)
	var once atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Acquires() && once.CompareAndSwap(false, true) {
			r := sc.Run() // acquired in Redis...
			cancel()      // ...while the caller gives up
			time.Sleep(20 * time.Millisecond)
			return r
		}
		return sc.Run()
	})
	require.ErrorIs(t, l.LockLease(rctx, time.Minute), client.ErrNotObtained)
	eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "raced").Val() == 0 },
		"the engine released the acquire that raced the cancel")
	settleGoroutines(t, before)
}
