package client_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// env is one Redis backend for the shared suite: a real redis-server on a
// real clock, or miniredis on a fake clock that moves Redis TTLs with it.
type env struct {
	name string
	rdb  *redis.Client
	srv  *redistest.Server    // real tier
	mini *miniredis.Miniredis // fast tier
	fake *clockwork.FakeClock // fast tier
	clk  clockwork.Clock
	// hooked, when set, is what the clients use instead of rdb.
	hooked *redistest.Hooked

	closing map[*client.Client]*atomic.Bool
}

const watchdog = time.Second

// realEnv starts a throwaway redis-server.
func realEnv(t *testing.T) *env {
	srv := redistest.Start(t)
	return &env{name: "redis", rdb: srv.Client(t), srv: srv, clk: clockwork.NewRealClock()}
}

// miniEnv starts an in-process miniredis whose time follows a fake clock.
func miniEnv(t *testing.T) *env {
	m := miniredis.RunT(t)
	fake := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m.SetTime(fake.Now())
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return &env{name: "miniredis", rdb: rdb, mini: m, fake: fake, clk: fake}
}

// both runs fn against real Redis and against miniredis.
func both(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("redis", func(t *testing.T) { fn(t, realEnv(t)) })
	t.Run("miniredis", func(t *testing.T) { fn(t, miniEnv(t)) })
}

// advance lets d pass: a real sleep, or on the fast tier the fake clock and
// miniredis's TTLs moved forward in small steps so the engine's timers fire
// and their Redis calls complete in order.
func (e *env) advance(d time.Duration) {
	if e.fake == nil {
		time.Sleep(d)
		return
	}
	const step = 20 * time.Millisecond
	for d > 0 {
		s := min(step, d)
		e.fake.Advance(s)
		e.mini.FastForward(s)
		e.mini.SetTime(e.fake.Now())
		d -= s
		time.Sleep(2 * time.Millisecond)
	}
}

// newClient starts a Client on e with a 1 s watchdog in its own actor
// system (ownSystemClient).
func (e *env) newClient(t *testing.T, opts ...client.Option) *client.Client {
	t.Helper()
	var rdb redis.UniversalClient = e.rdb
	if e.hooked != nil {
		rdb = e.hooked
	}
	c, _, closing := ownSystemClient(t, rdb,
		append([]client.Option{client.WithWatchdogTimeout(watchdog), client.WithClock(e.clk)}, opts...)...)
	if e.closing == nil {
		e.closing = map[*client.Client]*atomic.Bool{}
	}
	e.closing[c] = closing
	return c
}

// ownSystemClient starts a Client on rdb in an actor system of its own,
// closed at cleanup. The test fails if the engine produced a dead letter
// before the returned flag was set: a test that closes the client itself
// sets it first (timers racing the shutdown may make some), and the
// cleanup then expects Close to say ErrClosed.
func ownSystemClient(t *testing.T, rdb redis.UniversalClient, opts ...client.Option) (*client.Client, *actor.ActorSystem, *atomic.Bool) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(sys.Shutdown)
	var dead atomic.Int64
	closing := &atomic.Bool{}
	sub := sys.EventStream.Subscribe(func(evt any) {
		if _, ok := evt.(*actor.DeadLetterEvent); ok && !closing.Load() {
			dead.Add(1)
		}
	})
	c, err := client.New(rdb, append([]client.Option{client.WithActorSystem(sys)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		closedByTest := closing.Swap(true)
		assert.Zero(t, dead.Load(), "dead letters while the client ran")
		err := c.Close(context.Background())
		if closedByTest {
			assert.ErrorIs(t, err, client.ErrClosed)
		} else {
			assert.NoError(t, err)
		}
		sys.EventStream.Unsubscribe(sub)
	})
	return c, sys, closing
}

// close closes c from the test itself; dead letters after this point
// (timers racing the shutdown) are not counted.
func (e *env) close(t *testing.T, c *client.Client) {
	t.Helper()
	e.closing[c].Store(true)
	require.NoError(t, c.Close(context.Background()))
}

// get returns what read reads, failing t on its error: get(t, s.AvailablePermits).
func get[T any](t *testing.T, read func(context.Context) (T, error)) T {
	t.Helper()
	v, err := read(context.Background())
	require.NoError(t, err)
	return v
}

// set runs a TrySet call with n, failing t unless it set the value:
// set(t, s.TrySetPermits, 10).
func set(t *testing.T, trySet func(context.Context, int64) (bool, error), n int64) {
	t.Helper()
	ok, err := trySet(context.Background(), n)
	require.NoError(t, err)
	require.True(t, ok)
}

// eventually waits up to d of real time for cond.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, d, 2*time.Millisecond, msg)
}

// returned is when a call run in the background returned, which of its
// background's calls it was, and its error.
type returned struct {
	i   int
	at  time.Time
	err error
}

// background runs calls in goroutines; each one's return comes on C. At
// cleanup, before the clients the test made earlier close, the calls'
// context is cancelled and the goroutines waited for: a call the test left
// blocked (it failed early) does not outlive it.
type background struct {
	C   chan returned
	ctx context.Context
	wg  sync.WaitGroup
}

// newBackground makes a background for up to n calls (C holds all their
// returns).
func newBackground(t *testing.T, n int) *background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{C: make(chan returned, n), ctx: ctx}
	t.Cleanup(func() {
		cancel()
		await.Group(t, &b.wg, 10*time.Second, "the background calls, their context cancelled")
	})
	return b
}

// run starts call as call i.
func (b *background) run(i int, call func(context.Context) error) {
	b.wg.Go(func() {
		err := call(b.ctx)
		b.C <- returned{i: i, at: time.Now(), err: err}
	})
}

// inBackground runs call in a background of its own and returns the
// channel its return comes on.
func inBackground(t *testing.T, call func(context.Context) error) <-chan returned {
	b := newBackground(t, 1)
	b.run(0, call)
	return b.C
}

// wokenBy measures how soon a message wakes a waiter: it starts wait, a
// call that blocks until release, in the background; waits until
// listening reports that it listens on its channel, and 50 ms more for
// its attempt after subscribing to come back refused; runs release; and
// returns how long after it wait returned. It fails t if wait fails or
// takes more than 5 s.
func wokenBy(t *testing.T, wait func(context.Context) error, listening func() bool, release func(context.Context) error) time.Duration {
	t.Helper()
	return wokenAll(t, []func(context.Context) error{wait}, listening, release)[0]
}

// wokenAll is wokenBy for several waiters of one client (listening sees
// them as one): it returns how long after release each returned.
func wokenAll(t *testing.T, waits []func(context.Context) error, listening func() bool, release func(context.Context) error) []time.Duration {
	t.Helper()
	var done []<-chan returned
	for _, wait := range waits {
		done = append(done, inBackground(t, wait))
	}
	eventually(t, 5*time.Second, listening, "the waiters listen on their channel")
	time.Sleep(50 * time.Millisecond)
	released := time.Now()
	require.NoError(t, release(context.Background()))
	woke := make([]time.Duration, len(done))
	for i, ch := range done {
		r := await.Value(t, ch, 5*time.Second, "a waiter, after the release")
		require.NoError(t, r.err)
		woke[i] = r.at.Sub(released)
	}
	return woke
}

// realBenchClient starts a Client with default settings for a benchmark.
func realBenchClient(b *testing.B, rdb *redis.Client) *client.Client {
	c, err := client.New(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// blockUntil waits up to 5 s of real time for n timers on the fake clock.
func blockUntil(t *testing.T, fake *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, fake.BlockUntilContext(ctx, n))
}

// settleGoroutines waits up to 2 s for the goroutine count (countGoroutines)
// to fall back to before, and fails the test if it does not. It polls by
// hand: a helper such as require.Eventually runs goroutines of its own.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for countGoroutines() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.LessOrEqual(t, countGoroutines(), before, "goroutines left behind")
}

// countGoroutines counts this process's goroutines but the engine's idle
// pool workers: the pool keeps a goroutine it started for a burst of work
// (up to 64), which is not one left behind. A worker running work counts.
func countGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !idlePoolWorker(g) {
			count++
		}
	}
	return count
}

// idlePoolWorker tells whether the goroutine of stack trace g waits for work
// in the engine's pool: its first frame outside the runtime is the pool's
// receive loop.
func idlePoolWorker(g string) bool {
	header, frames, _ := strings.Cut(g, "\n")
	if !strings.Contains(header, "[chan receive") {
		return false
	}
	for line := range strings.SplitSeq(frames, "\n") {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "runtime.") {
			continue // a file:line, or a frame in the runtime
		}
		return strings.HasPrefix(line, "github.com/warden-go/warden/actors.(*Workers).work(")
	}
	return false
}

// awaitWhileTime lets time pass on e's clock, in small steps, until a value
// arrives on ch or max has passed on the clock. It returns the value and
// the clock time that passed.
func awaitWhileTime[T any](t *testing.T, e *env, ch <-chan T, max time.Duration, what string) (T, time.Duration) {
	t.Helper()
	start := e.clk.Now()
	for {
		select {
		case v := <-ch:
			return v, e.clk.Now().Sub(start)
		default:
		}
		if e.clk.Now().Sub(start) > max {
			t.Fatalf("%s: nothing after %v", what, max)
		}
		e.advance(10 * time.Millisecond)
	}
}
