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
	// holdings numbers the engine's holdings, unique across its key actors
	// and their lifetimes. RootProps sets it.
	holdings *atomic.Uint64
	// keyActorMade, when set (by tests), sees every key actor made.
	keyActorMade func(*keyActor)
	// IO is the parent context of every Redis call; cancelling it aborts the
	// calls in flight (Client.Close).
	IO context.Context
	// NewPermitID names the permit a permit-expirable semaphore acquire
	// asks for; nil means redisio.NewPermitID. A simulation sets it to draw
	// the IDs from its seed. It must return 32 lowercase hex characters,
	// never the same twice.
	NewPermitID func() string
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
	}
	return nil
}

// ioContext bounds one Redis call by redisio.IOTimeout.
func (c *Config) ioContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.IO, redisio.IOTimeout)
}

// detachedContext bounds by d a Redis call that must run even while Close
// cancels the engine's calls (an undo, a give-up).
func (c *Config) detachedContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.IO), d)
}

// closedOr is err, marked ErrClosed once the engine is closing.
func (c *Config) closedOr(err error) error {
	if c.IO.Err() != nil && !errors.Is(err, messages.ErrClosed) {
		return errors.Join(messages.ErrClosed, err)
	}
	return err
}
