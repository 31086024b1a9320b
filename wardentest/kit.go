package wardentest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/client"
)

// settleLimit bounds how long the kit waits, on the wall clock, for the
// engine to finish what it was given; an engine still busy after it fails
// the test.
const settleLimit = 10 * time.Second

// settleQuiet is how long the engine must stay idle, on the wall clock,
// before the kit believes it: it covers the hand-offs between goroutines
// that the kit cannot see (Redis writing a pub/sub message to a
// subscriber's connection).
const settleQuiet = time.Millisecond

// Kit is a warden Client on an embedded Redis whose time is a fake clock
// shared with the engine, with controls for time and faults. Make one with
// New. Client, Redis, Clock and Now may be called from any goroutine; the
// other methods are for the test's goroutine (they fail the test), one
// call at a time.
type Kit struct {
	t      testing.TB
	mr     *miniredis.Miniredis
	clock  *fakeClock
	sys    *actor.ActorSystem
	undoOn func()
	leaks  goleak.Option
	client *client.Client
	direct *redis.Client

	// advanceMu makes the calls that move time or inject faults take
	// turns; redisNow is the time Redis was last moved to.
	advanceMu sync.Mutex
	redisNow  time.Time

	mu sync.Mutex
	// busy counts the engine's work running: mailbox turns, Redis calls,
	// timer callbacks (goBusy).
	busy int
	// activity changes with every change the kit sees, so that a wait
	// can tell that nothing happened during it.
	activity uint64
	changed  chan struct{}
	conns    map[*trackedConn]struct{}
	losses   []*loss
	clients  []*client.Client
	rdbs     []*redis.Client
}

// New starts an embedded Redis (miniredis) and a Client on it whose engine
// runs on the kit's fake clock, with opts applied (the kit's own
// client.WithClock and client.WithActorSystem come last and win). The
// time starts at the same fixed instant in every test, and moves only
// with Advance and PauseEngine. New fails the test if the client cannot
// be made (an invalid option).
//
// The test's cleanup closes the kit's clients and Redis and then fails the
// test if a goroutine started since New is still running (goleak). The
// check sees the whole process: a test that uses a kit should not run in
// parallel (t.Parallel) with tests whose goroutines outlive it.
func New(t testing.TB, opts ...client.Option) *Kit {
	t.Helper()
	k := &Kit{
		t:       t,
		leaks:   goleak.IgnoreCurrent(),
		changed: make(chan struct{}),
		conns:   map[*trackedConn]struct{}{},
	}
	k.clock = newFakeClock(k)
	k.redisNow = k.clock.Now()
	k.mr = miniredis.NewMiniRedis()
	if err := k.mr.Start(); err != nil {
		t.Fatalf("wardentest: start the embedded Redis: %v", err)
	}
	k.mr.SetTime(k.redisNow)
	discard := slog.New(slog.DiscardHandler)
	k.sys = actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return discard }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
	)
	k.undoOn = actors.RunEnginesOn(k.sys, k.goBusy)
	k.direct = redis.NewClient(&redis.Options{Addr: k.mr.Addr(), DisableIdentity: true})
	t.Cleanup(k.cleanup)
	k.client = k.NewClient(opts...)
	return k
}

// Client returns the kit's Client, made by New.
func (k *Kit) Client() *client.Client { return k.client }

// NewClient returns another Client on the kit's Redis and clock, as a
// second process would have: its own engine, connections and owners. The
// kit closes it at cleanup (closing it earlier is fine). It fails the
// test if the client cannot be made.
func (k *Kit) NewClient(opts ...client.Option) *client.Client {
	k.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: k.mr.Addr(), DisableIdentity: true})
	rdb.AddHook(kitHook{k})
	all := append(append([]client.Option(nil), opts...), client.WithClock(k.clock), client.WithActorSystem(k.sys))
	c, err := client.New(rdb, all...)
	if err != nil {
		_ = rdb.Close()
		k.t.Fatalf("wardentest: new client: %v", err)
	}
	k.mu.Lock()
	k.clients = append(k.clients, c)
	k.rdbs = append(k.rdbs, rdb)
	k.mu.Unlock()
	return c
}

// Redis returns a go-redis client on the kit's Redis for the test's own
// commands (to look at a lock's keys, or delete them). The kit's faults do
// not touch it, and the kit closes it at cleanup.
func (k *Kit) Redis() *redis.Client { return k.direct }

// Clock returns the kit's fake clock, the one the engine runs on, for code
// under test that takes a clockwork.Clock: its timers fire as Advance
// passes their time.
func (k *Kit) Clock() clockwork.Clock { return k.clock }

// Now returns the kit's current time.
func (k *Kit) Now() time.Time { return k.clock.Now() }

// Advance moves the kit's time, the engine's and Redis's together, on by
// d. It fires the timers that fall due on the way one at a time in the
// order of their deadlines, moving Redis's time to each deadline first (so
// keys expire as on a real server) and letting the engine handle each
// completely before the next. It returns once the engine has handled
// everything the new time made due: renewals sent and answered, losses
// reported on the holders' Lost channels, waits timed out, waiters woken.
// Advance(0) only waits for the engine to finish what it is doing.
func (k *Kit) Advance(d time.Duration) {
	k.t.Helper()
	if d < 0 {
		k.t.Fatalf("wardentest: Advance(%v): want d >= 0", d)
	}
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	k.advance(k.clock.Now().Add(d))
}

// advance moves the time to until as Advance does. Redis's time never goes
// back: after PauseEngine it is ahead, and stays put until the engine's
// time catches up.
func (k *Kit) advance(until time.Time) {
	k.t.Helper()
	for {
		k.settle()
		tm := k.clock.next(until)
		if tm == nil {
			break
		}
		k.moveRedis(tm.at)
		tm.fire(tm.at)
	}
	k.clock.set(until)
	k.moveRedis(until)
	k.settle()
}

// moveRedis moves Redis's time on to t, if it is behind: its TTLs shrink
// by the difference.
func (k *Kit) moveRedis(t time.Time) {
	if !t.After(k.redisNow) {
		return
	}
	k.mr.FastForward(t.Sub(k.redisNow))
	k.mr.SetTime(t)
	k.redisNow = t
}

// goBusy runs fn on a goroutine of its own, counted as the engine's work
// until it returns. It is the scheduler of the kit's engines
// (actors.RunEnginesOn).
func (k *Kit) goBusy(fn func()) {
	k.mu.Lock()
	k.busy++
	k.changeLocked()
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			k.busy--
			k.changeLocked()
			k.mu.Unlock()
		}()
		fn()
	}()
}

// changeLocked records a change and wakes settle. k.mu is held.
func (k *Kit) changeLocked() {
	k.activity++
	close(k.changed)
	k.changed = make(chan struct{})
}

// idleLocked reports whether the engine has nothing to do: every piece of
// its work has returned, but for the pub/sub readers waiting for a message
// on a connection with no command awaiting its reply. k.mu is held.
func (k *Kit) idleLocked() bool {
	waiting := 0
	for c := range k.conns {
		if !c.pending {
			waiting += c.readers
		}
	}
	return k.busy <= waiting
}

// settle waits until the engine is idle and stays so for settleQuiet. It
// fails the test after settleLimit.
func (k *Kit) settle() {
	k.t.Helper()
	if err := k.waitIdle(settleLimit); err != nil {
		k.t.Fatal(err)
	}
}

// waitIdle is settle, returning an error instead of failing the test.
func (k *Kit) waitIdle(limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		idle, seen, changed := k.idleLocked(), k.activity, k.changed
		k.mu.Unlock()
		if idle {
			quiet := time.NewTimer(settleQuiet)
			select {
			case <-quiet.C:
				k.mu.Lock()
				same := k.activity == seen
				k.mu.Unlock()
				if same {
					return nil
				}
				continue
			case <-changed:
				quiet.Stop()
				continue
			case <-deadline.C:
				quiet.Stop()
			}
		} else {
			select {
			case <-changed:
				continue
			case <-deadline.C:
			}
		}
		k.mu.Lock()
		busy := k.busy
		k.mu.Unlock()
		return fmt.Errorf("wardentest: the engine did not settle within %v (%d pieces of its work running)", limit, busy)
	}
}

// cleanup closes the kit's clients, waits for their work to end, stops
// Redis and looks for leaked goroutines.
func (k *Kit) cleanup() {
	k.mu.Lock()
	clients, rdbs := k.clients, k.rdbs
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), settleLimit)
	defer cancel()
	for _, c := range clients {
		if err := c.Close(ctx); err != nil && !errors.Is(err, client.ErrClosed) {
			k.t.Errorf("wardentest: close a client: %v", err)
		}
	}
	if err := k.waitGone(settleLimit); err != nil {
		k.t.Error(err)
	}
	k.undoOn()
	k.sys.Shutdown()
	for _, rdb := range rdbs {
		_ = rdb.Close()
	}
	_ = k.direct.Close()
	k.mr.Close()
	if err := goleak.Find(k.leaks); err != nil {
		k.t.Errorf("wardentest: leaked goroutines: %v", err)
	}
}

// waitGone waits until no piece of the engines' work is running.
func (k *Kit) waitGone(limit time.Duration) error {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		busy, changed := k.busy, k.changed
		k.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("wardentest: %d pieces of the engine's work still running %v after Close", busy, limit)
		}
	}
}

// WaitWaiters waits until exactly n calls wait for name in the engines of
// the kit's clients, together: calls of any kind on the name (Lock and
// TryLockWait of a lock of any kind, a semaphore's Acquire, a latch's
// Await, ...) that reached their engine, made their first attempt and
// were refused, and wait now. The engines are idle when it returns. A test
// that starts a call on another goroutine calls it before it moves the
// time or frees the lock: the call's wait is then under way, its deadline
// counted from the call, its place in a fair queue taken. n = 0 waits
// until every waiter has gone (answered or withdrawn). It fails the test
// if the count is not n within 10s of wall time.
func (k *Kit) WaitWaiters(name string, n int) {
	k.t.Helper()
	if n < 0 {
		k.t.Fatalf("wardentest: WaitWaiters(%q, %d): want n >= 0", name, n)
	}
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	deadline := time.NewTimer(settleLimit)
	defer deadline.Stop()
	for {
		k.settle()
		k.mu.Lock()
		changed := k.changed
		k.mu.Unlock()
		got := k.waiters(name)
		if got == n {
			return
		}
		select {
		case <-changed: // the engine did something: look again
		case <-deadline.C:
			k.t.Fatalf("wardentest: %d calls wait for %q after %v, want %d", got, name, settleLimit, n)
		}
	}
}

// Waiters returns how many calls wait for name in the engines of the
// kit's clients, together, once the engines are idle (see WaitWaiters).
func (k *Kit) Waiters(name string) int {
	k.t.Helper()
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	k.settle()
	return k.waiters(name)
}

// waiters asks every live engine of the kit's clients for its actors of
// name, and each of them for its waiters. A closed client's engine, which
// does not answer, has none.
func (k *Kit) waiters(name string) int {
	k.mu.Lock()
	clients := append([]*client.Client(nil), k.clients...)
	k.mu.Unlock()
	n := 0
	for _, c := range clients {
		if _, live := k.sys.ProcessRegistry.Get(c.PID()); !live {
			continue // closed
		}
		res, err := k.sys.Root.RequestFuture(c.PID(), &actors.KeyActorsOf{Name: name}, settleLimit).Result()
		pids, ok := res.([]*actor.PID)
		if err != nil || !ok {
			continue
		}
		for _, pid := range pids {
			if _, live := k.sys.ProcessRegistry.Get(pid); !live {
				continue
			}
			res, err := k.sys.Root.RequestFuture(pid, &actors.WaiterCount{}, settleLimit).Result()
			if w, ok := res.(int); ok && err == nil {
				n += w
			}
		}
	}
	return n
}
