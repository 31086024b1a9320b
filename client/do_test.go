package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// TestDoReleasesWhenFnPanics: a panic in Do's fn goes on to Do's caller,
// and by then every lock type was released (a contender gets it at once,
// no Redis key is left) and fn's context is done (Do's loss watcher
// stopped).
func TestDoReleasesWhenFnPanics(t *testing.T) {
	eachMutex(t, func(t *testing.T, e *env, mc mutexCase) {
		ctx := testCtx(t)
		s := mc.setup(t, e, "do-panic")
		var fnCtx context.Context
		recovered := func() (p any) {
			defer func() { p = recover() }()
			_ = s.m.Do(ctx, func(ctx context.Context) error {
				fnCtx = ctx
				panic("boom")
			})
			return nil
		}()
		assert.Equal(t, "boom", recovered, "fn's panic reaches Do's caller")
		assert.Zero(t, e.rdb.Exists(ctx, s.keys...).Val(), "nothing held in Redis")
		ok, err := s.other.TryLock(ctx)
		require.NoError(t, err)
		assert.True(t, ok, "a contender gets the lock at once")
		require.NoError(t, s.other.Unlock(ctx))
		require.NotNil(t, fnCtx)
		assert.Error(t, fnCtx.Err(), "fn's context is done once Do returned")
	})
}

// TestDoUnlocksWithAnEndedContext: when Do's context ends while fn runs,
// the unlock still happens (on a context of its own) and Do returns fn's
// error as it is.
func TestDoUnlocksWithAnEndedContext(t *testing.T) {
	e := realEnv(t)
	c := e.newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := c.Lock("do-ctx")
	err := l.Do(ctx, func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	})
	assert.Equal(t, context.Canceled, err, "fn's error, as it is")
	assert.Zero(t, e.rdb.Exists(context.Background(), "do-ctx").Val(), "released")
}

// TestCloseCancelsRunningDo: with Do running on every lock type and a 3 s
// watchdog, closing the lock's client(s) 200 ms in cancels fn's context
// at once (well before the keys would expire) with a cause that matches
// ErrLockLost and ErrClosed, closes Lost (a Lost taken after Close is
// closed too), and Do returns an error that matches both, in one line
// naming the lock.
func TestCloseCancelsRunningDo(t *testing.T) {
	const wd = 3 * time.Second
	eachMutex(t, func(t *testing.T, e *env, mc mutexCase) {
		ctx := testCtx(t)
		s := mc.setup(t, e, "do-close", client.WithWatchdogTimeout(wd))
		type ended struct {
			at    time.Time
			cause error
		}
		started, cancelled := make(chan struct{}), make(chan ended, 1)
		result := inBackground(t, func(bctx context.Context) error {
			return s.m.Do(ctx, func(ctx context.Context) error {
				close(started)
				select {
				case <-ctx.Done():
					cancelled <- ended{time.Now(), context.Cause(ctx)}
					return ctx.Err()
				case <-bctx.Done(): // the test ended without a cancel
					return bctx.Err()
				}
			})
		})
		select {
		case <-started:
		case r := <-result:
			t.Fatalf("Do returned before fn started: %v", r.err)
		case <-time.After(5 * time.Second):
			t.Fatal("fn did not start within 5 s")
		}
		lost := s.m.Lost()
		time.Sleep(200 * time.Millisecond) // fn runs a while under the lock
		closeAt := time.Now()
		for _, c := range s.closers {
			e.close(t, c)
		}
		// Well within the watchdog timeout: the keys expire at 3 s.
		got := await.Value(t, cancelled, wd/2, "fn's context cancelled by Close")
		took := got.at.Sub(closeAt)
		t.Logf("%s: fn's context cancelled %v after Close began (watchdog %v)", mc.kind, took, wd)
		assert.Less(t, took, time.Second, "at once")
		assert.ErrorIs(t, got.cause, client.ErrClosed)
		assert.ErrorIs(t, got.cause, client.ErrLockLost)
		assert.True(t, isClosed(lost), "Lost taken before Close is closed")
		assert.True(t, isClosed(s.m.Lost()), "Lost taken after Close is closed")

		r := await.Value(t, result, 5*time.Second, "Do's return")
		require.Error(t, r.err)
		assert.ErrorIs(t, r.err, client.ErrClosed)
		assert.ErrorIs(t, r.err, client.ErrLockLost)
		assert.ErrorIs(t, r.err, context.Canceled, "fn's own error is kept")
		assert.NotContains(t, r.err.Error(), "\n", "one line")
		assert.True(t, strings.HasPrefix(r.err.Error(), "warden: "), "%q", r.err)
		assert.Contains(t, r.err.Error(), "do-close")
		t.Logf("%s: Do returned %q", mc.kind, r.err)
	})
}

// TestCloseAndReleaseCancelsRunningDo: CloseAndRelease cancels a running
// Do like Close, and releases its lock.
func TestCloseAndReleaseCancelsRunningDo(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t, client.WithWatchdogTimeout(30*time.Second))
	started := make(chan struct{})
	result := inBackground(t, func(bctx context.Context) error {
		return c.Lock("do-car").Do(ctx, func(ctx context.Context) error {
			close(started)
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-bctx.Done():
				return bctx.Err()
			}
		})
	})
	await.Value(t, started, 5*time.Second, "fn to start")
	e.closing[c].Store(true)
	require.NoError(t, c.CloseAndRelease(ctx))
	r := await.Value(t, result, 5*time.Second, "Do's return, cancelled by CloseAndRelease")
	assert.ErrorIs(t, r.err, client.ErrClosed)
	assert.ErrorIs(t, r.err, client.ErrLockLost)
	assert.Equal(t, "warden: lock do-car lost: client closed", r.err.Error(), "fn returned the cause: not repeated")
	assert.Zero(t, e.rdb.Exists(ctx, "do-car").Val(), "released")
}

// TestCloseClosesLostOfHandlesThatHold: Close closes the Lost channel of
// every handle that holds (also one that shares its owner's holding), and
// only theirs: a handle that never held gets an open channel.
func TestCloseClosesLostOfHandlesThatHold(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t, client.WithWatchdogTimeout(30*time.Second))
	held := c.Lock("cl:held", client.WithOwner("cl:owner"))
	shared := c.Lock("cl:held", client.WithOwner("cl:owner"))
	rw := c.ReadWriteLock("cl:rw")
	idle := c.Lock("cl:idle")
	require.NoError(t, held.Lock(ctx))
	require.NoError(t, shared.Lock(ctx))
	require.NoError(t, rw.ReadLock().Lock(ctx))
	before := held.Lost()
	e.close(t, c)
	for what, ch := range map[string]<-chan struct{}{"taken before Close": before, "held": held.Lost(),
		"shared owner": shared.Lost(), "read lock": rw.ReadLock().Lost()} {
		assert.True(t, isClosed(ch), "%s: Lost closed", what)
	}
	assert.False(t, isClosed(idle.Lost()), "a handle that never held")
	assert.True(t, errors.Is(held.Unlock(ctx), client.ErrClosed))
	assert.True(t, isClosed(held.Lost()), "still closed after a failed Unlock")
}
