package actors

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Interleavings forced through a redistest.Hooked Redis.

// gate is a channel a hook blocks on; it is opened at the latest when the
// test ends, so a failing test never leaves a script call hanging.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func hookedEngine(t *testing.T) (*engine, *redistest.Hooked) {
	rdb := redistest.Start(t).Client(t)
	h := redistest.NewHooked(rdb)
	return startEngine(t, rdb, func(c *Config) { c.Redis = h }), h
}

// A renewal that reads Redis just before a watchdog acquire lands reports
// the owner gone after the acquire succeeded. That must not be taken for a
// loss: the lock is held.
func TestRenewalRacingAcquireIsNotALoss(t *testing.T) {
	e, h := hookedEngine(t)
	renewed := newGate(t)
	acquiring := make(chan struct{}, 1)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		switch {
		case c.Acquires() && c.Args[0] == "victim":
			acquiring <- struct{}{}
			<-renewed.ch // the renewal runs in Redis first
			return c.Run()
		case c.Renews():
			r := c.Run()
			renewed.open()
			time.Sleep(300 * time.Millisecond) // and its reply comes back last
			return r
		}
		return c.Run()
	})
	out := e.request(&messages.Acquire{Name: "L", Owner: "victim", RequestID: "v1", Watch: true})
	await.Value(t, acquiring, 5*time.Second, "the acquire")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.clock.BlockUntilContext(ctx, 1)) // the registration's delay
	e.clock.Advance(registerDelay(30 * time.Second))
	require.NoError(t, e.clock.BlockUntilContext(ctx, 2)) // the renewer's tick and expiry
	e.clock.Advance(10 * time.Second)                     // the renewer's tick
	require.IsType(t, &messages.Acquired{}, await.Value(t, out, 5*time.Second, "Acquired"))
	select {
	case m := <-out:
		t.Fatalf("%T while Redis holds the lock (HEXISTS=%v)", m, e.rdb.HExists(context.Background(), "L", "victim").Val())
	case <-time.After(time.Second):
	}
	h.SetHook(nil)
	e.ask(t, &messages.Release{Name: "L", Owner: "victim", RequestID: "r"})
}

// An unlock message that arrives while the head waiter's attempt is in
// flight must not be dropped: if the attempt read the lock before it was
// freed, the waiter tries again at once rather than sleep on a stale PTTL.
func TestWakeupDuringAnAttemptInFlightIsKept(t *testing.T) {
	e, h := hookedEngine(t)
	ctx := context.Background()
	e.rdb.HSet(ctx, "L", "other", 1)
	e.rdb.PExpire(ctx, "L", time.Hour)
	var attempts atomic.Int32
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() && c.Args[0] == "w" && attempts.Add(1) == 2 {
			r := c.Run() // refused: "other" still holds it
			e.rdb.Del(ctx, "L")
			e.rdb.Publish(ctx, redisio.LockChannel("L"), redisio.UnlockMessage)
			time.Sleep(300 * time.Millisecond) // the message reaches the key actor first
			return r
		}
		return c.Run()
	})
	out := e.request(&messages.Acquire{Name: "L", Owner: "w", RequestID: "w1", Lease: time.Minute})
	m := await.Value(t, out, 3*time.Second, "the waiter, not left sleeping on the old PTTL (1h)")
	require.IsType(t, &messages.Acquired{}, m, "attempts=%d", attempts.Load())
}

// A waiter cancelled while its attempt is in flight is answered once, even
// if that attempt then fails.
func TestCancelThenErrorRepliesOnce(t *testing.T) {
	e, h := hookedEngine(t)
	inflight, fail := make(chan struct{}, 1), newGate(t)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() && c.Args[0] == "x" {
			inflight <- struct{}{}
			<-fail.ch
			return redistest.Failed(errors.New("i/o timeout"))
		}
		return c.Run()
	})
	out := e.request(&messages.Acquire{Name: "L", Owner: "x", RequestID: "x1", Lease: time.Minute})
	await.Value(t, inflight, 5*time.Second, "the attempt")
	e.sys.Root.Send(e.root, &messages.Cancel{Name: "L", Owner: "x", RequestID: "x1"})
	first := await.Value(t, out, 5*time.Second, "the answer to Cancel").(*messages.AcquireFailed)
	require.ErrorIs(t, first.Err, messages.ErrCancelled)
	fail.open()
	select {
	case second := <-out:
		t.Fatalf("a second reply for x1: %+v", second)
	case <-time.After(time.Second):
	}
}

// A key actor that fails (a bug) is stopped, not silently restarted: its
// waiters are answered, its holders told their holding is lost, and the
// next request for the name gets a fresh key actor.
func TestFailingKeyActorAnswersEverybody(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	holder := e.request(&messages.Acquire{Name: "C", Owner: "h", RequestID: "h1", Watch: true})
	require.IsType(t, &messages.Acquired{}, await.Value(t, holder, 5*time.Second, "the holder's Acquired"))
	waiter := e.request(&messages.Acquire{Name: "C", Owner: "w", RequestID: "w1"})
	require.Eventually(t, func() bool {
		return len(e.rdb.PubSubChannels(context.Background(), "*").Val()) == 1
	}, 5*time.Second, 5*time.Millisecond, "the waiter waits")

	e.sys.Root.Send(e.root, &crash{Key: key{Name: "C", Kind: messages.KindLock}})

	failed := await.Value(t, waiter, 5*time.Second, "the waiter's answer").(*messages.AcquireFailed)
	require.ErrorContains(t, failed.Err, "internal error")
	lost := await.Value(t, holder, 5*time.Second, "the holder's LockLost").(*messages.LockLost)
	require.ErrorIs(t, lost.Err, messages.ErrLockLost)
	require.Eventually(t, func() bool { return e.keyActors(t) == 0 }, 5*time.Second, 5*time.Millisecond,
		"root forgot the failed key actor")

	again := e.ask(t, &messages.Acquire{Name: "C", Owner: "w", RequestID: "w2", Deadline: e.clock.Now()})
	require.ErrorIs(t, again.(*messages.AcquireFailed).Err, messages.ErrTimeout,
		"a fresh key actor serves the name (the lock itself expires within its lease)")
}

// A failed key actor answers WaiterCount until it is stopped (0: it
// answered every waiter as it failed), so a test kit counting waiters
// never waits on it for nothing.
func TestFailedKeyActorAnswersWaiterCount(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "W", Owner: "h", RequestID: "h1"}))
	pids, err := e.sys.Root.RequestFuture(e.root, &KeyActorsOf{Name: "W"}, 5*time.Second).Result()
	require.NoError(t, err)
	require.Len(t, pids, 1)
	pid := pids.([]*actor.PID)[0]
	e.sys.Root.Send(pid, &crash{Key: key{Name: "W", Kind: messages.KindLock}})
	n, err := e.sys.Root.RequestFuture(pid, &WaiterCount{}, 3*time.Second).Result()
	if errors.Is(err, actor.ErrDeadLetter) {
		t.Log("the failed key actor had stopped already")
		return
	}
	require.NoError(t, err, "a failed key actor answers WaiterCount")
	assert.Equal(t, 0, n)
}

// A key actor that fails with a watchdog acquire in flight undoes it and
// stops its renewal, and answers requests routed to it before root retired
// it.
func TestFailureDuringAnAcquireInFlight(t *testing.T) {
	e, h := hookedEngine(t)
	ctx := context.Background()
	inflight, proceed := make(chan struct{}, 1), newGate(t)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() && c.Args[0] == "v" {
			inflight <- struct{}{}
			<-proceed.ch
		}
		return c.Run()
	})
	out := e.request(&messages.Acquire{Name: "F", Owner: "v", RequestID: "v1"})
	await.Value(t, inflight, 5*time.Second, "the acquire in flight")
	e.sys.Root.Send(e.root, &crash{Key: key{Name: "F", Kind: messages.KindLock}})
	late := e.request(&messages.Acquire{Name: "F", Owner: "late", RequestID: "l1"})
	time.Sleep(50 * time.Millisecond)
	proceed.open() // the acquire lands in Redis while the key actor fails

	require.ErrorContains(t, await.Value(t, out, 5*time.Second, "the waiter's answer").(*messages.AcquireFailed).Err,
		"internal error")
	switch m := await.Value(t, late, 5*time.Second, "an answer to the request sent after the fault").(type) {
	case *messages.AcquireFailed, *messages.Acquired:
	default:
		t.Fatalf("unexpected %T", m)
	}
	require.Eventually(t, func() bool { return e.rdb.HExists(ctx, "F", "v").Val() == false }, 5*time.Second,
		5*time.Millisecond, "the acquire that landed was undone")
	e.clock.Advance(time.Minute)
	time.Sleep(50 * time.Millisecond)
	assert.False(t, e.rdb.HExists(ctx, "F", "v").Val(), "and is not renewed")
}

// Holding IDs are unique across key actor lifetimes, so a client never
// takes a new holding for one it was told was lost.
func TestHoldingIDsOutliveTheKeyActor(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	first := e.ask(t, &messages.Acquire{Name: "H", Owner: "o", RequestID: "a1", Lease: time.Minute}).(*messages.Acquired)
	e.ask(t, &messages.Release{Name: "H", Owner: "o", RequestID: "r1"})
	// Time moves on until the key actor passivates: its idle timer may be
	// armed only after the release's answer.
	require.Eventually(t, func() bool {
		e.clock.Advance(time.Minute)
		return e.keyActors(t) == 0
	}, 5*time.Second, 5*time.Millisecond, "passivated")
	second := e.ask(t, &messages.Acquire{Name: "H", Owner: "o", RequestID: "a2", Lease: time.Minute}).(*messages.Acquired)
	assert.NotEqual(t, first.Holding, second.Holding)
}

// A renewal call that hangs does not delay the loss notice past the lease:
// the owner is told when the watchdog timeout has passed without a
// successful renewal.
func TestHungRenewalStillReportsTheLossOnTime(t *testing.T) {
	e, h := hookedEngine(t)
	out := e.request(&messages.Acquire{Name: "R", Owner: "o", RequestID: "a", Watch: true})
	require.IsType(t, &messages.Acquired{}, await.Value(t, out, 5*time.Second, "Acquired"))
	hang := newGate(t)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Renews() {
			<-hang.ch // Redis stopped answering
		}
		return c.Run()
	})
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, e.clock.BlockUntilContext(ctx, 1))
		cancel()
		e.clock.Advance(10 * time.Second) // a tick: watchdog 30s / 3
		time.Sleep(20 * time.Millisecond)
	}
	lost := await.Value(t, out, 2*time.Second, "LockLost while the renewal hangs").(*messages.LockLost)
	require.ErrorIs(t, lost.Err, messages.ErrLockLost)
	hang.open()
}

// The renewer and the subscriber survive a panic with their state: renewal
// goes on, and a waiter is still woken by the unlock message.
func TestRenewerAndSubscriberSurviveAPanic(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	ctx := context.Background()
	e.ask(t, &messages.Acquire{Name: "S", Owner: "held", RequestID: "h"}) // watchdog mode
	e.ask(t, &messages.Acquire{Name: "W", Owner: "holder", RequestID: "w0", Lease: time.Hour})
	waiter := e.request(&messages.Acquire{Name: "W", Owner: "waiter", RequestID: "w1"})
	require.Eventually(t, func() bool { return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 1 },
		5*time.Second, 5*time.Millisecond, "the waiter waits")

	e.sys.Root.Send(e.root, &crash{Actor: "renewer"})
	e.sys.Root.Send(e.root, &crash{Actor: "subscriber"})
	// Redis runs on real time: lower the TTL so only a renewal can raise it.
	require.NoError(t, e.rdb.PExpire(ctx, "S", 25*time.Second).Err())

	for range 4 { // two watchdog timeouts of ticks
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		require.NoError(t, e.clock.BlockUntilContext(bctx, 1))
		cancel()
		e.clock.Advance(20 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, e.rdb.HExists(ctx, "S", "held").Val())
	assert.Greater(t, e.rdb.PTTL(ctx, "S").Val(), 26*time.Second, "still renewed after the renewer's panic")

	require.NoError(t, e.rdb.Del(ctx, "W").Err())
	require.NoError(t, e.rdb.Publish(ctx, redisio.LockChannel("W"), redisio.UnlockMessage).Err())
	require.IsType(t, &messages.Acquired{}, await.Value(t, waiter, 5*time.Second, "the waiter, woken after the subscriber's panic"))
}

// A try (its deadline already passed) that arrives while another attempt
// is in flight still gets its own attempt: a Redis error reaches it as the
// error, never as a timeout it was not given the chance to beat.
func TestTryBehindAnAttemptInFlightIsAttempted(t *testing.T) {
	e, h := hookedEngine(t)
	inflight, proceed := make(chan struct{}, 1), newGate(t)
	down := errors.New("redis down")
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() {
			switch c.Args[0] {
			case "first":
				inflight <- struct{}{}
				<-proceed.ch
				return redistest.Failed(down)
			case "try":
				return redistest.Failed(down)
			}
		}
		return c.Run()
	})
	first := e.request(&messages.Acquire{Name: "T", Owner: "first", RequestID: "f1", Deadline: e.clock.Now()})
	await.Value(t, inflight, 5*time.Second, "the first attempt in flight")
	try := e.request(&messages.Acquire{Name: "T", Owner: "try", RequestID: "t1", Deadline: e.clock.Now()})
	time.Sleep(20 * time.Millisecond) // the try is queued behind the attempt
	proceed.open()
	require.ErrorIs(t, await.Value(t, first, 5*time.Second, "the first answer").(*messages.AcquireFailed).Err, down)
	failed := await.Value(t, try, 5*time.Second, "the try's answer").(*messages.AcquireFailed)
	require.ErrorIs(t, failed.Err, down, "the try was attempted, not timed out unattempted")
}

// A waiter that becomes the head while another owner of this process
// holds the lock makes no attempt that is sure to be refused: it waits for
// the release, which hands it the lock.
func TestWaiterBehindALocalHolderWaitsWithoutAttempting(t *testing.T) {
	e, h := hookedEngine(t)
	var attempts atomic.Int32
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() && c.Args[0] == "second" {
			attempts.Add(1)
		}
		return c.Run()
	})
	require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "L", Owner: "holder", RequestID: "h1",
		Lease: time.Minute}))
	first := e.request(&messages.Acquire{Name: "L", Owner: "first", RequestID: "f1", Lease: time.Minute})
	require.Eventually(t, func() bool { return len(e.rdb.PubSubChannels(context.Background(), "*").Val()) == 1 },
		5*time.Second, 5*time.Millisecond, "the first waiter listens for the unlock")
	second := e.request(&messages.Acquire{Name: "L", Owner: "second", RequestID: "s1"})
	time.Sleep(20 * time.Millisecond) // queued behind the first
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "L", Owner: "holder", RequestID: "r1"}))
	require.IsType(t, &messages.Acquired{}, await.Value(t, first, 5*time.Second, "the first waiter, handed the lock"))
	time.Sleep(50 * time.Millisecond)
	// The handoff's own unlock message may still wake it once; without
	// the rule it also attempts as it becomes the head.
	assert.LessOrEqual(t, attempts.Load(), int32(1), "the second waiter, now the head, attempted while the first holds")
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "L", Owner: "first", RequestID: "r2"}))
	require.IsType(t, &messages.Acquired{}, await.Value(t, second, 5*time.Second, "the second waiter, handed the lock"))
}

// A semaphore acquire that lands while Close cuts it is given back, once:
// its requester hears ErrClosed, the permit returns, and one undo ran.
func TestCloseGivesBackAnAcquireInFlightOnce(t *testing.T) {
	e, h := hookedEngine(t)
	ctx := context.Background()
	require.NoError(t, e.rdb.Set(ctx, "S", 1, 0).Err())
	latch := redisio.OpLatchKey("S", "a1")
	landed, proceed := make(chan struct{}, 1), newGate(t)
	var undos atomic.Int32
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		switch {
		case len(c.Keys) == 2 && c.Keys[1] == latch: // the acquire
			r := c.Run()
			landed <- struct{}{}
			<-proceed.ch // its answer comes once Close began
			return r
		case len(c.Keys) == 3 && c.Keys[1] == latch: // its undo
			undos.Add(1)
		}
		return c.Run()
	})
	out := e.request(&messages.Acquire{Name: "S", Kind: messages.KindSemaphore, Owner: "o", RequestID: "a1", Permits: 1})
	await.Value(t, landed, 5*time.Second, "the acquire, applied in Redis")
	require.Equal(t, "0", e.rdb.Get(ctx, "S").Val())
	e.cancelIO()
	proceed.open()
	e.stop()
	failed := await.Value(t, out, 5*time.Second, "the requester's answer").(*messages.AcquireFailed)
	require.ErrorIs(t, failed.Err, messages.ErrClosed)
	assert.Equal(t, "1", e.rdb.Get(ctx, "S").Val(), "the permit given back")
	assert.Equal(t, int32(1), undos.Load(), "undo calls")
}

// afterPipeline is a go-redis hook that runs a function once, right after
// the first pipeline of script calls sent once it is armed, before the
// pipeline's answer goes back to its caller.
type afterPipeline struct {
	fn atomic.Pointer[func()]
}

func (h *afterPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *afterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "eval" }) {
			return err // a new connection's own setup
		}
		if fn := h.fn.Swap(nil); fn != nil {
			(*fn)()
		}
		return err
	}
}

// scriptsWith counts the commands (script calls), pipelined or not, that
// name key.
type scriptsWith struct {
	key string
	n   atomic.Int32
}

func (h *scriptsWith) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptsWith) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if slices.Contains(cmd.Args(), any(h.key)) {
			h.n.Add(1)
		}
		return err
	}
}

func (h *scriptsWith) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if slices.Contains(cmd.Args(), any(h.key)) {
				h.n.Add(1)
			}
		}
		return err
	}
}

// A fair lock handed on locally to a waiter that sleeps, refused before,
// while another process's waiter heads Redis's queue: the handoff's
// acquire is refused. Should that other waiter take the lock and unlock it
// while the handoff's answer is on its way, its unlock message (on the
// local waiter's channel: it heads the queue now) reaches the key actor
// before the answer. The waiter must then attempt again at once; nothing
// else wakes it before its look again.
func TestFairHandoffRefusedButWokenInFlightAttemptsAgain(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	after := &afterPipeline{}
	attempts := &scriptsWith{key: redisio.AcquireLatchKey("F", "w")}
	rdb.AddHook(after)
	rdb.AddHook(attempts)
	e := startEngine(t, rdb)
	ctx := context.Background()
	remote, err := redisio.NewScripts("publish")
	require.NoError(t, err)
	acquire := func(owner, reqID string) redisio.AcquireResult {
		r, _, err := remote.FairAcquire(ctx, rdb, redisio.ReplicaSync{}, "F", owner, reqID, time.Minute, fairAllowance,
			time.Minute, e.clock.Now(), true)
		require.NoError(t, err)
		return r
	}

	require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "F", Kind: messages.KindFairLock,
		Owner: "holder", RequestID: "h1", Lease: time.Minute}))
	require.False(t, acquire("remote", "x1").Acquired, "another process's waiter heads the queue")
	out := e.request(&messages.Acquire{Name: "F", Kind: messages.KindFairLock, Owner: "w", RequestID: "w1",
		Lease: time.Minute})
	// Its first attempt queues it; its channel's subscription makes the
	// second; then it sleeps (the engine's clock stands still).
	require.Eventually(t, func() bool { return attempts.n.Load() == 2 }, 5*time.Second, 5*time.Millisecond,
		"the waiter's attempts")
	require.Equal(t, []string{"remote", "w"}, rdb.LRange(ctx, redisio.FairQueueKey("F"), 0, -1).Val())

	fn := func() {
		// The handoff ran: the holder's unlock woke the queue's head, and
		// the waiter's acquire was refused. The head takes the lock and
		// unlocks; its unlock's message, on the waiter's channel, reaches
		// the key actor first.
		if !acquire("remote", "x2").Acquired {
			t.Error("the queue's head takes the lock")
			return
		}
		n, held, _, err := remote.FairUnlock(ctx, rdb, redisio.ReplicaSync{}, "F", "remote", "x3", time.Minute,
			e.clock.Now())
		if err != nil || n != 0 || !held {
			t.Errorf("the head's unlock: %d %v %v", n, held, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	after.fn.Store(&fn)
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "F", Kind: messages.KindFairLock,
		Owner: "holder", RequestID: "h2"}))
	m := await.Value(t, out, 3*time.Second, "the waiter, not left asleep until its look again")
	require.IsType(t, &messages.Acquired{}, m)
	assert.Equal(t, int32(4), attempts.n.Load(), "attempts: two, the handoff's, one more on the wake-up")
}
