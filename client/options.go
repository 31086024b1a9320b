package client

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Option configures a Client.
type Option func(*options) error

type options struct {
	watchdog    time.Duration
	clock       clockwork.Clock
	system      *actor.ActorSystem
	logger      *slog.Logger
	clientID    string
	idleTimeout time.Duration
	replicaSync redisio.ReplicaSync
	noPipeline  bool
	// fairPlaceTime is WithFairPlaceTime's value; 0 selects the watchdog
	// timeout.
	fairPlaceTime time.Duration
	// service is WithService's name; "" selects the executable's.
	service    string
	noRegistry bool
	// registryRetention is WithRegistryRetention's value; 0 selects
	// DefaultRegistryRetention.
	registryRetention time.Duration
	// meters and tracers are the OpenTelemetry providers; lockNames adds
	// warden.name to the metrics.
	meters    metric.MeterProvider
	tracers   trace.TracerProvider
	lockNames bool
}

func defaultOptions() options {
	return options{
		watchdog:    30 * time.Second,
		clock:       clockwork.NewRealClock(),
		logger:      slog.New(slog.DiscardHandler),
		idleTimeout: 2 * time.Second,
	}
}

// WithWatchdogTimeout sets the lease of locks taken in watchdog mode
// (Lock, TryLock, or a lease of 0): the engine renews each such lock every
// d/3 while it is held, so a crashed process's locks expire within d. It
// must be a whole number of milliseconds, at least 30ms. The default is 30s.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < MinLease || d%time.Millisecond != 0 {
			return invalid("watchdog timeout", "%v: want a whole number of ms, at least 30ms", d)
		}
		o.watchdog = d
		return nil
	}
}

// WithClock sets the clock every engine timer runs on: waits, renewals,
// passivation. Simulations pass a fake clock. The default is the real
// clock.
func WithClock(c clockwork.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return invalid("clock", "nil")
		}
		o.clock = c
		return nil
	}
}

// WithActorSystem runs the engine's actors in sys, which the caller owns
// and shuts down after Client.Close. The default is a private system that
// Close shuts down.
func WithActorSystem(sys *actor.ActorSystem) Option {
	return func(o *options) error {
		if sys == nil {
			return invalid("actor system", "nil")
		}
		o.system = sys
		return nil
	}
}

// WithLogger sets where the engine logs, each record's message prefixed
// "warden: ". At Warn: what may leave a lock held or lost other than as
// asked (a lock lost while held, a give-back or an undo that failed, an
// unlock not replicated) and Redis failing the engine (the first renewal
// failure of a streak, the others at Debug; a pub/sub connection lost).
// At Info: renewals succeeding again, a pub/sub connection restored. At
// Error: an internal fault of the engine. Failures caused by Close
// cancelling the engine's calls are at Debug; a lock taken and released
// logs nothing. The records of the actor system the Client makes itself
// are discarded (with WithActorSystem, that system's own logger gets
// them). The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return invalid("logger", "nil")
		}
		o.logger = l
		return nil
	}
}

// WithClientID sets the client's identity, the first part of every owner
// ("<clientID>:<n>"). Two live clients must never share one: their
// owners would be the same, so each would hold the other's locks. With
// the client registry on, a Client that finds another's record under its
// ID as it starts logs a warning (WithLogger), and Close deletes only its
// own record. The default is a random UUID.
func WithClientID(id string) Option {
	return func(o *options) error {
		if id == "" || len(id) > 1024 {
			return invalid("client id", "want 1 to 1024 bytes, got %d", len(id))
		}
		o.clientID = id
		return nil
	}
}

// WithIdleTimeout sets how long the engine keeps the state of a lock name
// that nobody in this process holds or waits for before it frees it. The
// default is 2s: a name used once costs the engine about 1 KB until
// then (910 to 1,050 bytes measured; what it keeps for the next request is let go of 200ms into the
// idle spell), and a name in use keeps its state. A longer timeout spares
// names used every few seconds the state's making anew, which their next
// call pays (measured on a 2-core VM: 17 to 34µs and 55 allocations more
// than a lock+unlock pair's 148 to 162µs); a shorter one frees many
// names used once sooner.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return invalid("idle timeout", "%v: want > 0", d)
		}
		o.idleTimeout = d
		return nil
	}
}

// WithAutoPipelining turns the automatic pipelining of the engine's script
// calls on or off. On (the default), script calls that many lock names make
// at the same time go to Redis as one pipeline per round trip; a call made
// alone is sent at once, as it would be without it. It applies to
// go-redis's *redis.Client (including Sentinel's) and *redis.ClusterClient;
// other UniversalClient implementations are always called directly.
func WithAutoPipelining(on bool) Option {
	return func(o *options) error {
		o.noPipeline = !on
		return nil
	}
}

// WithReplicaSync makes every acquire and unlock wait until replicas
// replicas acknowledged it, up to timeout (Redis WAIT on the write's
// connection). An acquire they do not acknowledge is undone, exactly the
// hold it added, and tried again; after 3 tries it fails with
// ErrNotReplicated. An unlock is not undone (it only logs). This narrows the
// window in which a failover loses a lock; it does not close it. replicas
// must be at least 1 and timeout from 1ms to 3s. The default is off.
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) error {
		if replicas < 1 {
			return invalid("replicas", "%d: want at least 1", replicas)
		}
		if timeout < time.Millisecond || timeout > 3*time.Second {
			return invalid("replica sync timeout", "%v: want 1ms to 3s", timeout)
		}
		o.replicaSync = redisio.ReplicaSync{Replicas: replicas, Timeout: timeout}
		return nil
	}
}

// LockOption configures a lock handle.
type LockOption func(*lockOptions)

type lockOptions struct {
	owner    string
	ownerSet bool
	// backOff is a spin lock's back-off (zero: the default), set by
	// WithExponentialBackOff or WithConstantBackOff; backOffErr is what
	// was wrong with it.
	backOff    messages.BackOff
	backOffSet bool
	backOffErr error
}

// WithOwner sets the handle's owner identity, so that several handles act
// as one owner: reentry is the same owner acquiring again. Use one owner
// from one Client at a time: the engine keeps each owner's holdings, and
// the idempotency of its retried requests, per Client. The default is a
// fresh owner per handle, "<clientID>:<n>".
func WithOwner(owner string) LockOption {
	return func(o *lockOptions) { o.owner, o.ownerSet = owner, true }
}

// WithFairPlaceTime sets how long a fair lock waiter's place in the queue
// outlives the engine's last refresh of it, for a waiter that gives no wait
// (Lock, LockLease); one that gives a wait (TryLockWait) keeps it for its
// wait when that is shorter. While a waiter waits, its engine refreshes its
// place at least every third of that time, so a live waiter never loses its
// place however long it waits, and the place of a waiter whose process died
// is given up within it: the waiters behind it move up then, not minutes later. Places
// written by Redisson clients in the same queue are not refreshed and keep
// Redisson's deadlines. Each process reads the deadlines on its own clock:
// the clocks of the processes sharing a fair lock must agree to well within
// d/3. d must be a whole number of milliseconds, at least 30ms. The default
// is the watchdog timeout (WithWatchdogTimeout).
func WithFairPlaceTime(d time.Duration) Option {
	return func(o *options) error {
		if d < MinLease || d%time.Millisecond != 0 {
			return invalid("fair place time", "%v: want a whole number of ms, at least 30ms", d)
		}
		o.fairPlaceTime = d
		return nil
	}
}

// WithExponentialBackOff sets how a spin lock's waiter (Client.SpinLock)
// spaces its polls of Redis, as Redisson's LockOptions.ExponentialBackOff:
// after a refused attempt it polls again initial later, then each pause is
// multiplier times the last plus a jitter of up to one millisecond per
// pause so far, capped at max, and max once reached. initial must be at
// least 1ms (a shorter pause would poll Redis in a busy loop), max at
// least initial, multiplier at least 1; an invalid back-off is reported by
// every call on the handle. Only a spin lock takes a back-off. The default
// is 1ms, 128ms and 2, Redisson's.
func WithExponentialBackOff(initial, max time.Duration, multiplier int) LockOption {
	return func(o *lockOptions) {
		b := messages.BackOff{Initial: initial, Max: max, Multiplier: multiplier}
		o.backOff, o.backOffSet, o.backOffErr = b, true, nil
		if initial <= 0 {
			o.backOffErr = invalid("back-off initial", "%v: want > 0", initial)
			return
		}
		o.backOffErr = b.Validate()
	}
}

// WithConstantBackOff makes a spin lock's waiter (Client.SpinLock) poll
// Redis every d while it waits, as Redisson's LockOptions.ConstantBackOff
// (whose own default is 64ms). d must be at least 1ms (a shorter pause
// would poll Redis in a busy loop); an invalid back-off is reported by
// every call on the handle. Only a spin lock takes a back-off. The default
// is the exponential back-off of WithExponentialBackOff.
func WithConstantBackOff(d time.Duration) LockOption {
	return func(o *lockOptions) {
		o.backOff, o.backOffSet, o.backOffErr = messages.ConstantBackOff(d), true, nil
		if d < time.Millisecond {
			o.backOffErr = invalid("back-off delay", "%v: want at least 1ms", d)
		}
	}
}

// WithMeterProvider sets where the Client's OpenTelemetry metrics go (the
// meter "github.com/warden-go/warden"). Every instrument has the attribute
// warden.kind: lock, fair_lock, read_lock, write_lock, fenced_lock,
// semaphore, permit_semaphore, count_down_latch, multi_lock, red_lock,
// spin_lock, non_reentrant_lock, non_reentrant_fair_lock, group_lock (a
// StripedLock's stripe is a lock, several stripes at once a multi_lock).
// The members of a MultiLock or RedLock are counted under their own kind
// as well, so a sum over every warden.kind counts such a holding once as
// the group and once per member: sum the kinds you mean.
//
//   - warden.lock.acquire.duration (histogram, s): from an acquire call
//     (Lock, TryLockWait, Semaphore.Acquire, CountDownLatch.Await, ...) to
//     its answer; warden.outcome is acquired, timeout (a Try call's wait or
//     ctx's deadline ran out), cancelled (ctx was cancelled) or error.
//   - warden.lock.hold.duration (histogram, s): from the acquire that began
//     a holding to its end; warden.end is released, lost, or closed (the
//     Client was closed while it held).
//   - warden.lock.held (asynchronous up-down counter): holdings of the
//     Client now.
//   - warden.lock.waiting (asynchronous up-down counter): acquire calls
//     waiting for their answer now.
//   - warden.lock.held.age.max (observable gauge, s): the age of the
//     oldest holding (per kind) of the Clients that share mp (a RedLock's
//     Clients, say), for a "held too long" alert.
//   - warden.lock.lost (counter): holdings lost while held, each once.
//   - warden.renewal.duration (histogram, s) and warden.renewal.failures
//     (counter): the watchdog's renewal calls; a call renews locks of
//     several kinds at once and counts under each.
//
// Holdings are those of locks (every kind with an owner, and MultiLock
// and RedLock); semaphore permits and latches have acquire calls only.
// The lock name is not an attribute unless WithMetricLockNames adds it. A
// no-op provider (go.opentelemetry.io/otel/metric/noop) turns the metrics
// off at no cost. The default is the global provider, otel.GetMeterProvider,
// a no-op until the application sets one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) error {
		if mp == nil {
			return invalid("meter provider", "nil")
		}
		o.meters = mp
		return nil
	}
}

// WithMetricLockNames adds the attribute warden.name, the lock's name
// (a MultiLock's member names, joined with ", "), to every metric but the
// renewal ones. Each name then makes series of its own: use it only with
// a few, fixed names. The default is off.
func WithMetricLockNames() Option {
	return func(o *options) error {
		o.lockNames = true
		return nil
	}
}

// WithTracerProvider sets where the Client's OpenTelemetry spans go (the
// tracer "github.com/warden-go/warden"): a span per blocking call, a child
// of the span in the call's context. "warden.acquire" covers an acquire
// with its wait (Lock, TryLockWait, Semaphore.Acquire,
// CountDownLatch.Await, and those of MultiLock and RedLock, whose members'
// acquires are its children); "warden.release" an Unlock (a MultiLock's
// or RedLock's: one per member), a Semaphore's Release or ReleaseIfExists,
// a permit's Release, TryRelease, ReleasePermits or TryReleasePermits
// (not_held when the semaphore or a permit is gone). Each has the
// attributes warden.name, warden.kind and warden.outcome (acquired,
// timeout, cancelled or error; released, not_held or error). A no-op
// provider (go.opentelemetry.io/otel/trace/noop) turns tracing off at no
// cost; the global provider, until the application sets one, costs a few
// small allocations per call. The default is the global provider,
// otel.GetTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return invalid("tracer provider", "nil")
		}
		o.tracers = tp
		return nil
	}
}
