package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Config is what every actor of one engine shares. It is read-only once the
// engine starts.
type Config struct {
	// Redis runs scripts and reads.
	Redis redisio.Redis
	// Scripts wraps warden's Lua scripts.
	Scripts *redisio.Scripts
	// NewPubSub opens the engine's pub/sub connection.
	NewPubSub func(ctx context.Context) redisio.PubSub
	// Clock drives every timer of the engine.
	Clock clockwork.Clock
	// Watchdog is the lease of watchdog-mode locks; they are renewed every
	// Watchdog/3.
	Watchdog time.Duration
	// IdleTimeout is how long a key actor with nothing to do lives before it
	// is stopped.
	IdleTimeout time.Duration
	// Logger receives the engine's diagnostics.
	Logger *slog.Logger
	// ReplicaSync, when it asks for replicas, makes every acquire and unlock
	// wait for their acknowledgement (WAIT); an acquire they do not
	// acknowledge is undone and tried again, replicaTries times at most.
	ReplicaSync redisio.ReplicaSync
	// Cluster tells that Redis is a cluster: a batched renewal then sends
	// one script call per hash slot.
	Cluster bool
	// Workers runs the actors' mailboxes and Redis calls.
	Workers *Workers
	// Routes, when set, is the table of the engine's live key actors that
	// root keeps and the engine's own sender (the Client) reads, to send
	// requests straight to them (Routes.Request). Nil makes one nobody
	// else reads. One Routes serves one root.
	Routes *Routes
	// holdings numbers the engine's holdings, unique across its key actors
	// and their lifetimes. RootProps sets it.
	holdings *atomic.Uint64
	// SharedDeadlines, when positive, lets the Redis calls that start
	// within that long of each other share one context (see ioContext);
	// zero gives every call its own, whose deadline a simulation reads.
	// It must stay small against redisio.LatchTTL - redisio.IOTimeout.
	SharedDeadlines time.Duration
	// calls hands out the shared call contexts. RootProps sets it.
	calls *callDeadlines
	// keyActorMade, when set (by tests), sees every key actor made, and
	// keyActorTrimmed every trim, in the trimmed actor's turn.
	keyActorMade, keyActorTrimmed func(*keyActor)
	// opStarted, when set (by tests), sees every Redis call a key actor
	// started, in its turn, once the call is dispatched; opDoneSeen sees
	// every call's result in its key actor's turn, before the actor
	// handles it.
	opStarted  func(*keyActor, *op)
	opDoneSeen func(*keyActor, *opDone)
	// renewerGot, when set (by tests), sees every register, pause and
	// unregister the renewer receives, in its turn.
	renewerGot func(msg any)
	// IO is the parent context of every Redis call; cancelling it aborts the
	// calls in flight (Client.Close).
	IO context.Context
	// FairPlaceTime is how long a fair-lock waiter's place in Redis's queue
	// outlives its last refresh when the waiter gave no wait (a waiter with
	// a shorter wait keeps its place for that); its attempts refresh it at
	// least every third of it while it waits. Zero selects Watchdog.
	FairPlaceTime time.Duration
	// NewPermitID names the permit a permit-expirable semaphore acquire
	// asks for; nil means redisio.NewPermitID. A simulation sets it to draw
	// the IDs from its seed. It must return 32 lowercase hex characters,
	// never the same twice.
	NewPermitID func() string
	// Registry, when set, is the client's record in the client registry,
	// which the engine writes as it starts and refreshes (registryActor).
	Registry *Registry
	// RenewalObserved, when set, hears of every renewal script call the
	// renewer made: how long it took, the kinds of the locks it renewed
	// (each once), and its error. It is called on the call's worker, off
	// every actor.
	RenewalObserved func(took time.Duration, kinds []messages.Kind, err error)
}

// newPermitID returns a fresh permit ID from NewPermitID, or
// redisio.NewPermitID when it is nil.
func (c *Config) newPermitID() string {
	if c.NewPermitID != nil {
		return c.NewPermitID()
	}
	return redisio.NewPermitID()
}

// survive recovers a panic in an actor's Receive, logs it and lets the
// actor go on with its state as it is. Restarting would lose that state
// silently (renewal registrations, subscriptions); the key actor, whose
// state is per name, instead fails and retires (keyActor.fail).
func survive(cfg *Config, who string) {
	if r := recover(); r != nil {
		cfg.Logger.Error("warden: internal error; the actor goes on", slog.String("actor", who), slog.Any("panic", r))
	}
}

func (c *Config) validate() error {
	switch {
	case c.Redis == nil || c.Scripts == nil || c.NewPubSub == nil:
		return fmt.Errorf("actors: config needs Redis, Scripts and NewPubSub")
	case c.Clock == nil || c.Logger == nil || c.IO == nil || c.Workers == nil:
		return fmt.Errorf("actors: config needs Clock, Logger, Workers and IO")
	case c.Watchdog <= 0 || c.IdleTimeout <= 0:
		return fmt.Errorf("actors: config needs positive Watchdog and IdleTimeout")
	case c.FairPlaceTime < 0:
		return fmt.Errorf("actors: FairPlaceTime %v is negative", c.FairPlaceTime)
	case c.SharedDeadlines < 0 || c.SharedDeadlines > time.Second:
		return fmt.Errorf("actors: SharedDeadlines %v is outside 0..1s", c.SharedDeadlines)
	case c.Registry != nil && (c.Registry.Key == "" || c.Registry.Redis == nil || len(c.Registry.Fields)%2 != 0):
		return fmt.Errorf("actors: Registry needs a Key, Redis and field, value pairs")
	}
	return nil
}

// ioContext bounds one Redis call by redisio.IOTimeout. With a
// SharedDeadlines window the bound is up to that window longer, and the
// calls that start within one window share one context, whose deadline
// ends them all: a call costs no timer of its own. Close cancels them
// through IO.
func (c *Config) ioContext() (context.Context, context.CancelFunc) {
	if c.calls == nil {
		return context.WithTimeout(c.IO, redisio.IOTimeout)
	}
	return c.calls.get(c.IO), noCancel
}

func noCancel() {}

// callDeadlines hands out the shared call contexts: each is the IO context
// with a deadline redisio.IOTimeout after the end of its window, used by
// every call that starts in that window.
type callDeadlines struct {
	window time.Duration
	cur    atomic.Pointer[callWindow]
}

type callWindow struct {
	ctx   context.Context
	until time.Time // the window's end; later calls need a new window
	// cancel is kept only so that the context is not lost: the deadline
	// (or Close, through IO) ends it, never an earlier call, as calls
	// still running share it.
	cancel context.CancelFunc
}

// get returns the context of the current window, opening a new one when it
// has passed. Windows are on the wall clock, as socket deadlines are. A
// caller that loses the race to open a window looks again: the window the
// winner opened may have begun long before (the winner stalled), and then
// ends too early for this call.
func (d *callDeadlines) get(io context.Context) context.Context {
	for {
		now := time.Now()
		w := d.cur.Load()
		if w != nil && now.Before(w.until) {
			return w.ctx
		}
		n := &callWindow{until: now.Add(d.window)}
		n.ctx, n.cancel = context.WithDeadline(io, n.until.Add(redisio.IOTimeout))
		if d.cur.CompareAndSwap(w, n) {
			return n.ctx
		}
		n.cancel() // another call opened a window first: look at it
	}
}

// detachedContext bounds by d a Redis call that must run even while Close
// cancels the engine's calls (an undo, a give-up).
func (c *Config) detachedContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.IO), d)
}

// retryLevel is the level of a failure the engine retries by itself: Warn,
// or Debug once the engine is closing, when every Redis call it makes is
// cancelled.
func (c *Config) retryLevel() slog.Level {
	if c.IO.Err() != nil {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// failStreak logs the outcomes of a Redis call an actor makes again every
// period whatever happens: set while the calls fail, it logs the first
// failure of a streak at retryLevel, the others at Debug, and the first
// success after it at Info. A failure once the engine is closing is
// Close cancelling the call, not a fault, and is not logged.
type failStreak bool

// note logs the outcome err of one call: failed names the failure,
// recovered the success that ends a streak.
func (f *failStreak) note(cfg *Config, err error, failed, recovered string) {
	switch {
	case err != nil && cfg.IO.Err() != nil:
		return
	case err != nil:
		level := cfg.retryLevel()
		if *f {
			level = slog.LevelDebug
		}
		*f = true
		cfg.Logger.Log(context.Background(), level, failed, slog.Any("err", err))
	case bool(*f):
		*f = false
		cfg.Logger.Info(recovered)
	}
}

// closedOr is err, marked ErrClosed once the engine is closing.
func (c *Config) closedOr(err error) error {
	if c.IO.Err() != nil && !errors.Is(err, messages.ErrClosed) {
		return fmt.Errorf("%w: %w", messages.ErrClosed, err)
	}
	return err
}
