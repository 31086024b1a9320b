package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// engine is one running engine for a protocol test: its root PID, the actor
// system, the Redis it uses, and the fake clock its timers run on.
type engine struct {
	sys   *actor.ActorSystem
	root  *actor.PID
	rdb   *redis.Client
	clock *clockwork.FakeClock
	dead  *atomic.Int64
	// cancelIO cancels the engine's Redis calls, as Close does first.
	cancelIO context.CancelFunc
	// stop closes the engine as Client.Close does (once; the test's
	// cleanup calls it too).
	stop func()
}

// startEngine runs an engine on rdb; tune may change its config (e.g. to
// route script calls through a redistest.Hooked).
func startEngine(t *testing.T, rdb *redis.Client, tune ...func(*Config)) *engine {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	dead := &atomic.Int64{}
	stopping := &atomic.Bool{}
	sub := sys.EventStream.Subscribe(func(evt any) {
		if d, ok := evt.(*actor.DeadLetterEvent); ok && !stopping.Load() {
			dead.Add(1)
			t.Logf("dead letter to %v: %T %+v", d.PID, d.Message, d.Message)
		}
	})
	scripts, err := redisio.NewScripts("publish")
	require.NoError(t, err)
	require.NoError(t, scripts.Load(context.Background(), rdb))
	clock := clockwork.NewFakeClock()
	ioCtx, cancel := context.WithCancel(context.Background())
	workers := NewWorkers()
	cfg := Config{
		Workers:     workers,
		Redis:       rdb,
		Scripts:     scripts,
		NewPubSub:   func(ctx context.Context) redisio.PubSub { return redisio.NewPubSub(ctx, rdb) },
		Clock:       clock,
		Watchdog:    30 * time.Second,
		IdleTimeout: time.Minute,
		Logger:      slog.New(slog.DiscardHandler),
		IO:          ioCtx,
	}
	for _, f := range tune {
		f(&cfg)
	}
	props, err := RootProps(cfg)
	require.NoError(t, err)
	e := &engine{sys: sys, root: sys.Root.Spawn(props), rdb: rdb, clock: clock, dead: dead, cancelIO: cancel}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			stopping.Store(true)
			cancel()
			require.NoError(t, sys.Root.PoisonFuture(e.root).Wait())
		})
	}
	t.Cleanup(func() {
		assert.Zero(t, dead.Load(), "dead letters")
		e.stop()
		sys.EventStream.Unsubscribe(sub)
		sys.Shutdown()
		workers.Stop()
	})
	return e
}

// ask sends msg to the engine and returns its reply.
func (e *engine) ask(t *testing.T, msg any) any {
	t.Helper()
	r, err := e.sys.Root.RequestFuture(e.root, msg, 5*time.Second).Result()
	require.NoError(t, err)
	return r
}

// probe is an actor that sends requests for a test and hands every reply
// and pushed event (LockLost) to the test through a channel.
type probe struct{ out chan any }

// probeSend asks a probe to send msg to To as a request.
type probeSend struct {
	To  *actor.PID
	Msg any
}

func (p *probe) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *probeSend:
		ctx.Request(m.To, m.Msg)
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		p.out <- m
	}
}

// request sends msg to the engine from a new probe and returns the channel
// its replies and events arrive on.
func (e *engine) request(msg any) <-chan any {
	out := make(chan any, 16)
	pid := e.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &probe{out: out} }))
	e.sys.Root.Send(pid, &probeSend{To: e.root, Msg: msg})
	return out
}

func (e *engine) keyActors(t *testing.T) int {
	return e.ask(t, &KeyActorCount{}).(int)
}

func TestProtocolAcquireReleaseWatch(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	ctx := context.Background()
	acq := &messages.Acquire{Name: "p", Owner: "o1", RequestID: "a1", Lease: time.Minute}
	got := e.ask(t, acq).(*messages.Acquired)
	assert.Equal(t, 1, got.HoldCount)
	assert.Equal(t, "a1", got.RequestID)
	holding := got.Holding

	again := e.ask(t, &messages.Acquire{Name: "p", Owner: "o1", RequestID: "a2", Lease: time.Minute}).(*messages.Acquired)
	assert.Equal(t, 2, again.HoldCount)
	assert.Equal(t, holding, again.Holding, "a reentry joins the holding")

	refused := e.ask(t, &messages.Acquire{Name: "p", Owner: "o2", RequestID: "b1", Lease: time.Minute,
		Deadline: e.clock.Now()}).(*messages.AcquireFailed)
	require.ErrorIs(t, refused.Err, messages.ErrTimeout)

	w := e.ask(t, &messages.Watch{Name: "p", Owner: "o1"}).(*messages.Watched)
	assert.True(t, w.Held)
	assert.Equal(t, holding, w.Holding)
	assert.False(t, e.ask(t, &messages.Watch{Name: "p", Owner: "o2"}).(*messages.Watched).Held)

	r := e.ask(t, &messages.Release{Name: "p", Owner: "o1", RequestID: "r1"}).(*messages.Released)
	assert.Equal(t, 1, r.Remaining)
	r = e.ask(t, &messages.Release{Name: "p", Owner: "o1", RequestID: "r2"}).(*messages.Released)
	assert.Zero(t, r.Remaining)
	f := e.ask(t, &messages.Release{Name: "p", Owner: "o1", RequestID: "r3"}).(*messages.ReleaseFailed)
	require.ErrorIs(t, f.Err, messages.ErrNotHeld)
	assert.Zero(t, e.rdb.Exists(ctx, "p").Val())
}

func TestProtocolRejectsMalformedRequests(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	for _, m := range []*messages.Acquire{
		{Name: "", Owner: "o", RequestID: "r"},
		{Name: "n", Owner: "", RequestID: "r"},
		{Name: "n", Owner: "o", RequestID: ""},
		{Name: "n", Owner: "o", RequestID: "r", Lease: -time.Second},
		{Name: "n", Owner: "o", RequestID: "r", Lease: 1500 * time.Microsecond},
		{Name: "n", Owner: "o", RequestID: "r", Kind: 42},
	} {
		f := e.ask(t, m).(*messages.AcquireFailed)
		require.ErrorIs(t, f.Err, messages.ErrInvalidArgument, "%+v", m)
	}
	f := e.ask(t, &messages.Release{Name: "n", RequestID: "r"}).(*messages.ReleaseFailed)
	require.ErrorIs(t, f.Err, messages.ErrInvalidArgument)
	w := e.ask(t, &messages.Watch{Owner: "o"}).(*messages.Watched)
	require.ErrorIs(t, w.Err, messages.ErrInvalidArgument)
	x := e.ask(t, &messages.Extend{Name: "n", Owner: "o", RequestID: "r", Lease: time.Microsecond}).(*messages.ExtendFailed)
	require.ErrorIs(t, x.Err, messages.ErrInvalidArgument)
	assert.Contains(t, x.Err.Error(), "lease")
	assert.Zero(t, e.rdb.DBSize(context.Background()).Val(), "nothing reached Redis")
	assert.Zero(t, e.keyActors(t), "no key actor was started")
}

func TestProtocolCancelAnswersTheWaiter(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	e.ask(t, &messages.Acquire{Name: "c", Owner: "holder", RequestID: "h", Lease: time.Minute})
	out := e.request(&messages.Acquire{Name: "c", Owner: "w", RequestID: "w1"})
	require.Eventually(t, func() bool {
		return e.rdb.PubSubNumSub(context.Background(), redisio.LockChannel("c")).Val()[redisio.LockChannel("c")] == 1
	}, 5*time.Second, 2*time.Millisecond, "the waiter refused, listening")
	e.sys.Root.Send(e.root, &messages.Cancel{Name: "c", Owner: "someone else", RequestID: "w1"})
	select {
	case m := <-out:
		t.Fatalf("another owner's cancel with the same request ID answered the waiter: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
	e.sys.Root.Send(e.root, &messages.Cancel{Name: "c", Owner: "w", RequestID: "w1"})
	m := await.Value(t, out, 5*time.Second, "the cancelled waiter's answer")
	require.ErrorIs(t, m.(*messages.AcquireFailed).Err, messages.ErrCancelled)
}

func TestProtocolDeadlineOnTheEngineClock(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	e.ask(t, &messages.Acquire{Name: "d", Owner: "holder", RequestID: "h", Lease: time.Hour})
	waiting := e.sys.Root.RequestFuture(e.root, &messages.Acquire{Name: "d", Owner: "w", RequestID: "w1",
		Deadline: e.clock.Now().Add(10 * time.Second)}, 5*time.Second)
	bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.clock.BlockUntilContext(bctx, 1))
	e.clock.Advance(10 * time.Second)
	r, err := waiting.Result()
	require.NoError(t, err)
	require.ErrorIs(t, r.(*messages.AcquireFailed).Err, messages.ErrTimeout, "the deadline is data, enforced by the fake clock")
}

func TestIdleKeyActorsArePassivated(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	for i := range 20 {
		name := "idle:" + string(rune('a'+i))
		e.ask(t, &messages.Acquire{Name: name, Owner: "o", RequestID: name, Lease: time.Minute})
		e.ask(t, &messages.Release{Name: name, Owner: "o", RequestID: name + "r"})
		// Its key actor arms its idle timer after it answered the
		// release; a Watch it answers at once orders that before the test
		// moves the clock.
		e.ask(t, &messages.Watch{Name: name, Owner: "o"})
	}
	assert.Equal(t, 20, e.keyActors(t))
	held := e.ask(t, &messages.Acquire{Name: "kept", Owner: "o", RequestID: "k", Lease: time.Hour}).(*messages.Acquired)
	require.Equal(t, 1, held.HoldCount)

	e.clock.Advance(2 * time.Minute)
	require.Eventually(t, func() bool { return e.keyActors(t) == 1 }, 2*time.Second, 5*time.Millisecond,
		"idle key actors stopped; the holder's stays")
	r := e.ask(t, &messages.Release{Name: "kept", Owner: "o", RequestID: "kr"}).(*messages.Released)
	assert.Zero(t, r.Remaining, "the surviving key actor still knows its holding")
	again := e.ask(t, &messages.Acquire{Name: "idle:a", Owner: "o", RequestID: "again", Lease: time.Minute}).(*messages.Acquired)
	assert.Equal(t, 1, again.HoldCount, "a passivated name is served by a new key actor")
}

// The idle timer stays armed through busy spells: a key actor used again
// before its idle timer fires is passivated IdleTimeout after its latest
// idle spell began, not its first.
func TestKeyActorIdleSinceItsLastUse(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	use := func(id string) {
		e.ask(t, &messages.Acquire{Name: "reused", Owner: "o", RequestID: id, Lease: time.Minute})
		e.ask(t, &messages.Release{Name: "reused", Owner: "o", RequestID: id + "r"})
		// The key actor notes its idle spell's start after it answered the
		// release; a Watch it answers at once orders that note before the
		// test moves the clock.
		e.ask(t, &messages.Watch{Name: "reused", Owner: "o"})
	}
	use("1") // idle from t0: the timer is armed for t0+1m
	e.clock.Advance(40 * time.Second)
	use("2")                          // busy, then idle again from t0+40s
	e.clock.Advance(30 * time.Second) // t0+70s: the first tick comes early
	assert.Never(t, func() bool { return e.keyActors(t) == 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"idle for 30s of its 1m: not passivated")
	e.clock.Advance(31 * time.Second) // t0+101s: idle for 61s
	require.Eventually(t, func() bool { return e.keyActors(t) == 0 }, 2*time.Second, 5*time.Millisecond,
		"passivated once idle for IdleTimeout since its last use")
}

// An idle key actor lets go of what it keeps for its next requests
// trimAfter into its idle spell, long before it passivates, and serves
// its next request as before.
func TestIdleKeyActorTrimsWhatItKeeps(t *testing.T) {
	made, trimmed := make(chan *keyActor, 1), make(chan *keyActor, 4)
	e := startEngine(t, redistest.Start(t).Client(t), func(c *Config) {
		c.keyActorMade = func(a *keyActor) { made <- a }
		c.keyActorTrimmed = func(a *keyActor) { trimmed <- a }
	})
	use := func(id string) {
		require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "trim", Owner: "o", RequestID: id}))
		require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "trim", Owner: "o", RequestID: id + "r"}))
		e.ask(t, &messages.Watch{Name: "trim", Owner: "o"}) // orders the idle spell's start before the clock moves
	}
	// Read only where no turn of the actor's can run: after one of its
	// answers with no timer due, or in its trim's hook.
	kept := func(a *keyActor) bool {
		return a.spare != nil || a.spareHolding != nil || a.holdings != nil || a.renewals.registered != nil ||
			a.renewals.more != nil || a.args != nil
	}
	use("1")
	a := await.Value(t, made, 5*time.Second, "the key actor")
	require.True(t, kept(a), "a key actor just used keeps its spares")
	e.clock.Advance(trimAfter - time.Millisecond)
	select {
	case <-trimmed:
		t.Fatal("trimmed before trimAfter")
	case <-time.After(100 * time.Millisecond):
	}
	e.clock.Advance(time.Millisecond)
	require.False(t, kept(await.Value(t, trimmed, 5*time.Second, "the trim")),
		"spare ops, holding, maps and script arguments let go of trimAfter into the idle spell")
	assert.Equal(t, 1, e.keyActors(t), "trimmed, not passivated")
	held := e.ask(t, &messages.Acquire{Name: "trim", Owner: "o", RequestID: "2"}).(*messages.Acquired)
	assert.Equal(t, 1, held.HoldCount, "the trimmed key actor serves its name as before")
	assert.Equal(t, "1", e.rdb.HGet(context.Background(), "trim", "o").Val(), "its hold is in Redis")
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "trim", Owner: "o", RequestID: "2r"}))
	assert.Zero(t, e.rdb.Exists(context.Background(), "trim").Val(), "and released there")
}

// Key actors that passivate leave no memory behind: once many names were
// touched and their key actors passivated, none of those key actors is
// still reachable. It runs on the real clock: the fake clock keeps its
// fired timers in its backing array, and with them the key actors their
// callbacks name.
func TestPassivatedKeyActorsAreFreed(t *testing.T) {
	var live atomic.Int64
	e := startEngine(t, redistest.Start(t).Client(t), func(c *Config) {
		c.Clock = clockwork.NewRealClock()
		c.IdleTimeout = 50 * time.Millisecond
		c.keyActorMade = func(a *keyActor) {
			live.Add(1)
			runtime.AddCleanup(a, func(*atomic.Int64) { live.Add(-1) }, &live)
		}
	})
	const names = 2000
	for i := range names {
		name := fmt.Sprintf("passivate:%d", i)
		require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: name, Owner: "o", RequestID: "a",
			Lease: time.Minute}))
		require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: name, Owner: "o", RequestID: "r"}))
	}
	require.Eventually(t, func() bool { return e.keyActors(t) == 0 }, 10*time.Second, 10*time.Millisecond,
		"every key actor passivated")
	require.Eventually(t, func() bool {
		runtime.GC()
		return live.Load() == 0
	}, 5*time.Second, 20*time.Millisecond, "passivated key actors freed (%d of %d still reachable)", live.Load(), names)
}

// crowd is an actor that asks for one lock on behalf of many owners and
// releases each holding as soon as it is granted, counting the grants and
// checking that no two holdings overlap.
type crowd struct {
	engine  *actor.PID
	name    string
	owners  int
	holding string
	granted int
	overlap int
	done    chan struct{}
	failed  chan error
}

func (c *crowd) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for i := range c.owners {
			owner := fmt.Sprintf("owner-%d", i)
			ctx.Request(c.engine, &messages.Acquire{Name: c.name, Owner: owner, RequestID: "a", Lease: time.Minute})
		}
	case *messages.Acquired:
		if c.holding != "" {
			c.overlap++
		}
		c.holding = m.Owner
		c.granted++
		ctx.Request(c.engine, &messages.Release{Name: c.name, Owner: m.Owner, RequestID: "r"})
	case *messages.Released:
		c.holding = ""
		if c.granted == c.owners {
			close(c.done)
		}
	case *messages.AcquireFailed:
		c.failed <- m.Err
	case *messages.ReleaseFailed:
		c.failed <- m.Err
	}
}

// 10,000 waiters on one name in one process all acquire, one at a time,
// each handed the lock by the release before it. The waiters are requests
// of one actor, so the count is not bounded by goroutines.
func TestTenThousandWaitersAllAcquire(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	c := &crowd{engine: e.root, name: "crowd", owners: 10000, done: make(chan struct{}), failed: make(chan error, 1)}
	start := time.Now()
	pid := e.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }))
	t.Cleanup(func() { _ = e.sys.Root.PoisonFuture(pid).Wait() })
	select {
	case <-c.done:
	case err := <-c.failed:
		t.Fatal(err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("not every waiter acquired in 2 minutes")
	}
	took := time.Since(start)
	t.Logf("%d waiters acquired and released in %v (%.0f handoffs/s)", c.owners, took.Round(time.Millisecond),
		float64(c.owners)/took.Seconds())
	assert.Zero(t, c.overlap, "two holdings at once")
	assert.Zero(t, e.rdb.Exists(context.Background(), "crowd").Val())
}
