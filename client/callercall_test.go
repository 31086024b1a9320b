package client_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
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
	"github.com/warden-go/warden/internal/redistest"
)

// goroutineID is the calling goroutine's number, from its stack's first
// line ("goroutine 42 [running]:").
func goroutineID() int64 {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line = bytes.TrimPrefix(line, []byte("goroutine "))
	n, _ := strconv.ParseInt(string(line[:bytes.IndexByte(line, ' ')]), 10, 64)
	return n
}

// onGoroutine runs call on a goroutine of its own and returns that
// goroutine's number and call's error, failing the test when call does not
// return within 5 s (call's context may never end: the test still does
// not wait for ever).
func onGoroutine(t *testing.T, call func() error) (int64, error) {
	t.Helper()
	type result struct {
		id  int64
		err error
	}
	done := make(chan result, 1)
	go func() { done <- result{goroutineID(), call()} }()
	r := await.Value(t, done, 5*time.Second, "the call's return")
	return r.id, r.err
}

// A caller whose context can never end makes the Redis calls of its Lock
// and Unlock on its own goroutine once its name has a live key actor; a
// caller whose context may end leaves them to the engine's workers, so
// that it can return at once when its context ends
// (TestContextEndingDuringAStalledCallReturnsAtOnce).
func TestCallWhoseContextCannotEndRunsOnItsCaller(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	var on atomic.Int64 // the goroutine of the last script call on "caller-call"
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if len(sc.Keys) > 0 && sc.Keys[0] == "caller-call" {
			on.Store(goroutineID())
		}
		return sc.Run()
	})
	l := c.Lock("caller-call")
	bg := context.Background()
	// The first request spawns the key actor (through root: its call goes
	// to a worker), and a request posted while a worker still runs a turn
	// of the actor may find its offer withdrawn; once a pair made both its
	// calls on its caller, the actor's last turn ran there too and every
	// pair after it starts on an idle mailbox.
	warm := false
	for range 20 {
		idL, err := onGoroutine(t, func() error { return l.Lock(bg) })
		require.NoError(t, err)
		onL := on.Load()
		idU, err := onGoroutine(t, func() error { return l.Unlock(bg) })
		require.NoError(t, err)
		if warm = idL == onL && idU == on.Load(); warm {
			break
		}
	}
	require.True(t, warm, "within 20 pairs, one made both its calls on its callers' goroutines")
	var id int64
	var err error
	for i := range 3 {
		id, err = onGoroutine(t, func() error { return l.Lock(context.WithoutCancel(bg)) })
		require.NoError(t, err)
		assert.Equal(t, id, on.Load(), "lock %d: the acquire's call was made on its caller's goroutine", i)
		id, err = onGoroutine(t, func() error { return l.Unlock(bg) })
		require.NoError(t, err)
		assert.Equal(t, id, on.Load(), "unlock %d: the unlock's call was made on its caller's goroutine", i)
	}
	assert.Zero(t, e.rdb.Exists(testCtx(t), "caller-call").Val(), "the last unlock released the lock")

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	id, err = onGoroutine(t, func() error { return l.Lock(ctx) })
	require.NoError(t, err)
	assert.NotEqual(t, id, on.Load(), "a caller whose context may end leaves its acquire's call to a worker")
	id, err = onGoroutine(t, func() error { return l.Unlock(ctx) })
	require.NoError(t, err)
	assert.NotEqual(t, id, on.Load(), "and its unlock's call")
}

// A panic in a Redis call made on its caller's goroutine (here a hook of
// the engine's Redis client) reaches that caller, and the engine settles
// the call as one whose outcome is unknown: it undoes the acquire, the
// lock can be taken again, and Close does not wait for a call that never
// ends.
func TestPanicInACallOnItsCallerReachesTheCallerAndLeavesTheEngineWhole(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)
	var caller atomic.Int64 // the goroutine whose acquire's call panics
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		// Only on the caller's goroutine: a worker's panic would end the
		// test binary, as it ends any process.
		if sc.Acquires() && len(sc.Keys) > 0 && sc.Keys[0] == "caller-panic" && goroutineID() == caller.Load() {
			sc.Run() // applied in Redis; then the reply is never seen
			panic("hook failed")
		}
		return sc.Run()
	})
	l := c.Lock("caller-panic")
	require.NoError(t, l.Lock(ctx)) // the key actor is live
	require.NoError(t, l.Unlock(ctx))

	// A request posted while a worker still runs a turn of the actor may
	// find its offer withdrawn (its call then runs on a worker, and the
	// hook lets it be): try again.
	var err error
	for range 20 {
		_, err = onGoroutine(t, func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("recovered: %v", r)
				}
			}()
			caller.Store(goroutineID())
			if err := l.Lock(context.Background()); err != nil {
				return err
			}
			return l.Unlock(context.Background())
		})
		if err != nil {
			break
		}
	}
	caller.Store(0)
	require.EqualError(t, err, "recovered: hook failed", "the panic reached the caller")
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "error"),
		"the panicked wait is measured as an error")
	assert.Zero(t, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "timeout"),
		"not as a wait that ran out")
	eventually(t, 5*time.Second, func() bool { return e.rdb.Exists(ctx, "caller-panic").Val() == 0 },
		"the engine undoes the acquire the panicking call applied")

	_, err = onGoroutine(t, func() error { return l.Lock(context.Background()) })
	require.NoError(t, err, "the lock is taken again")
	_, err = onGoroutine(t, func() error { return l.Unlock(context.Background()) })
	require.NoError(t, err)
	e.closing[c].Store(true)
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	require.NoError(t, await.Value(t, closed, 5*time.Second, "Close"))
}

// Close while a Redis call made on its caller's goroutine is held in
// Redis: Close waits for that call, as it waits for a worker's, and once
// it is let through both the caller and Close return.
func TestCloseDuringACallOnItsCallerReturnsOnceTheCallEnds(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	c := e.newClient(t)
	ctx := testCtx(t)
	gate := make(chan struct{})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(open) // a failing test does not leave the call held
	entered := make(chan int64, 1)
	var holdNext atomic.Bool
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Acquires() && len(sc.Keys) > 0 && sc.Keys[0] == "caller-close" && holdNext.CompareAndSwap(true, false) {
			entered <- goroutineID()
			<-gate
		}
		return sc.Run()
	})
	l := c.Lock("caller-close")
	bg := context.Background()
	// Until a pair runs on its caller (see TestCallWhoseContextCannotEndRunsOnItsCaller).
	for range 20 {
		_, err := onGoroutine(t, func() error { return l.Lock(bg) })
		require.NoError(t, err)
		_, err = onGoroutine(t, func() error { return l.Unlock(bg) })
		require.NoError(t, err)
		holdNext.Store(true)
		caller := make(chan int64, 1)
		locked := make(chan error, 1)
		go func() { caller <- goroutineID(); locked <- l.Lock(bg) }()
		callerID := await.Value(t, caller, 5*time.Second, "the caller")
		if on := await.Value(t, entered, 5*time.Second, "the acquire reaching Redis"); on != callerID {
			open() // on a worker this time: let it through and try again
			require.NoError(t, await.Value(t, locked, 5*time.Second, "the acquire"))
			require.NoError(t, l.Unlock(ctx))
			gate = make(chan struct{})
			opened = sync.Once{}
			continue
		}
		closeWhileHeld(t, e, c, locked, open)
		return
	}
	t.Fatal("within 20 tries, no acquire's call was made on its caller's goroutine")
}

// closeWhileHeld closes c while the acquire that locked reports on is held
// in Redis, and checks that Close waits for it and that both return once
// open lets it through.
func closeWhileHeld(t *testing.T, e *env, c *client.Client, locked <-chan error, open func()) {
	t.Helper()
	ctx := testCtx(t)
	e.closing[c].Store(true)
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the engine's call was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	open()
	require.NoError(t, await.Value(t, closed, 5*time.Second, "Close once the call ended"))
	err := await.Value(t, locked, 5*time.Second, "the caller once the call ended")
	if err != nil {
		require.ErrorIs(t, err, client.ErrClosed)
	}
}

// A panic in a MultiLock member's acquire made on the caller's goroutine
// reaches the caller, and the members the set took before it are given
// back (the engine undoes the panicking member's own acquire), so no
// member stays held, renewed by its watchdog, for the set's next holding
// to reenter. The set's acquire is measured as an error.
func TestPanicInAMultiLockMembersCallGivesBackTheMembersTaken(t *testing.T) {
	e, h := hookedEnv(t, clockwork.NewRealClock())
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)
	var caller atomic.Int64 // the goroutine whose member acquire panics
	h.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		// Only on the caller's goroutine, as above.
		if sc.Acquires() && len(sc.Keys) > 0 && sc.Keys[0] == "mlpanic-b" && goroutineID() == caller.Load() {
			panic("hook failed")
		}
		return sc.Run()
	})
	set := client.NewMultiLock(c.Lock("mlpanic-a"), c.Lock("mlpanic-b"))
	require.NoError(t, set.Lock(ctx)) // the members' key actors are live
	require.NoError(t, set.Unlock(ctx))

	var err error
	for range 20 { // until the panicking call ran on its caller (see above)
		_, err = onGoroutine(t, func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("recovered: %v", r)
				}
			}()
			caller.Store(goroutineID())
			if err := set.Lock(context.Background()); err != nil {
				return err
			}
			return set.Unlock(context.Background())
		})
		if err != nil {
			break
		}
	}
	caller.Store(0)
	require.EqualError(t, err, "recovered: hook failed", "the panic reached the caller")
	assert.Zero(t, e.rdb.Exists(ctx, "mlpanic-a").Val(), "the member taken before the panic is given back")
	eventually(t, 5*time.Second, func() bool { return e.rdb.Exists(ctx, "mlpanic-b").Val() == 0 },
		"nothing of the panicking member's acquire stays")
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "multi_lock", "warden.outcome", "error"),
		"the set's acquire is measured as an error")

	_, err = onGoroutine(t, func() error { return set.Lock(context.Background()) })
	require.NoError(t, err, "the set is taken again")
	_, err = onGoroutine(t, func() error { return set.Unlock(context.Background()) })
	require.NoError(t, err)
	assert.Zero(t, e.rdb.Exists(ctx, "mlpanic-a", "mlpanic-b").Val(), "its Unlock frees every member")
}
