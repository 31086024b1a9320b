package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// keyEntry is root's record of one live key actor.
type keyEntry struct {
	pid    *actor.PID
	routed uint64
}

// rootActor is the engine's entry point: it spawns the subscriber, the
// renewer and, on first use of a (name, kind), its key actor (a count
// actor for the counting kinds); routes every
// messages.* request to the key actor; and stops a key actor that reports
// itself idle if nothing was routed to it since.
type rootActor struct {
	cfg  *Config
	keys map[key]*keyEntry
	refs *engineRefs
	// keyProps and countProps spawn every key actor and count actor: one
	// Props each for all names, their producers making the actor for the
	// key route spawns (spawning). A producer runs inside the Spawn call,
	// in root's turn; protoactor calls it again only to restart an actor
	// after a panic, which every engine actor's guard (survive) recovers.
	keyProps, countProps *actor.Props
	spawning             key
}

var _ actor.Actor = (*rootActor)(nil)

// RootProps returns the props of an engine's root actor.
func RootProps(cfg Config) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.holdings = &atomic.Uint64{}
	if cfg.SharedDeadlines > 0 {
		cfg.calls = &callDeadlines{window: cfg.SharedDeadlines}
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &rootActor{cfg: &cfg, keys: map[key]*keyEntry{}}
	}, actor.WithDispatcher(cfg.Workers), withMailbox), nil
}

// Receive handles one message; every state change of root happens here.
func (a *rootActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "root")
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.refs = &engineRefs{root: ctx.Self(), subscriber: ctx.Spawn(subscriberProps(a.cfg)),
			renewer: ctx.Spawn(renewerProps(a.cfg)), idle: newIdleTimers(a.cfg.Clock, ctx.ActorSystem())}
		a.keyProps = actor.PropsFromProducer(func() actor.Actor { return newKeyActor(a.cfg, a.spawning, a.refs) },
			actor.WithDispatcher(a.cfg.Workers), withMailbox)
		a.countProps = actor.PropsFromProducer(func() actor.Actor { return newCountActor(a.cfg, a.spawning, a.refs) },
			actor.WithDispatcher(a.cfg.Workers), withMailbox)
		if a.cfg.Registry != nil {
			ctx.Spawn(registryProps(a.cfg))
		}
	case *messages.Acquire:
		if err := a.validate(m.Validate(), m.Name, m.Kind); err != nil {
			a.reject(ctx, acquireFailed(m, err))
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *messages.Release:
		if err := a.validate(m.Validate(), m.Name, m.Kind); err != nil {
			a.reject(ctx, releaseFailed(m, err, 0))
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *messages.Extend:
		if err := a.validate(m.Validate(), m.Name, m.Kind); err != nil {
			a.reject(ctx, extendFailed(m, err, 0))
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *messages.Cancel:
		if m.Validate() == nil {
			a.route(ctx, key{m.Name, m.Kind})
		}
	case *messages.Watch:
		if err := a.validate(m.Validate(), m.Name, m.Kind); err != nil {
			a.reject(ctx, watchFailed(m, err))
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *passivate:
		if e := a.keys[m.Key]; e != nil && e.pid.Equal(m.PID) && e.routed == m.Seen {
			a.forget(m.Key)
			ctx.Poison(m.PID)
		}
	case *actor.Stopping:
		a.stopKeyActors(ctx)
		a.refs.idle.stop()
	case *KeyActorCount:
		ctx.Respond(len(a.keys))
	case *KeyActorsOf:
		var pids []*actor.PID
		for k, e := range a.keys {
			if k.Name == m.Name {
				pids = append(pids, e.pid)
			}
		}
		ctx.Respond(pids)
	case *Closing:
		for k, e := range a.keys {
			if k.Kind.Held() {
				ctx.Send(e.pid, m)
			}
		}
	case *crash:
		switch m.Actor {
		case "renewer":
			ctx.Send(a.refs.renewer, m)
		case "subscriber":
			ctx.Send(a.refs.subscriber, m)
		default:
			if e := a.keys[m.Key]; e != nil {
				ctx.Send(e.pid, m)
			}
		}
	case *retire:
		// A key actor that failed: requests already routed to it are
		// answered with its fault as Poison drains its mailbox; the next
		// request for the name starts a fresh key actor.
		if e := a.keys[m.Key]; e != nil && e.pid.Equal(m.PID) {
			a.forget(m.Key)
			ctx.Poison(m.PID)
		}
	}
}

// forget drops k's entry. A map never gives back the room it grew to, so
// once the last key actor is gone the map is made anew.
func (a *rootActor) forget(k key) {
	delete(a.keys, k)
	if len(a.keys) == 0 {
		a.keys = map[key]*keyEntry{}
	}
}

// stopKeyActors stops every live key actor and waits until each has
// stopped (answered its waiters), as protoactor does for children before
// their parent stops.
func (a *rootActor) stopKeyActors(ctx actor.Context) {
	futures := make([]actor.Future, 0, len(a.keys))
	for k, e := range a.keys {
		futures = append(futures, ctx.ActorSystem().Root.StopFuture(e.pid))
		delete(a.keys, k)
	}
	for _, f := range futures {
		_ = f.Wait()
	}
}

// validate adds to a request's own checks (err, from its Validate) the
// slot rule of a Redis Cluster: a name whose keys would span slots is
// refused, as the client refuses it, before a script fails with CROSSSLOT.
func (a *rootActor) validate(err error, name string, kind messages.Kind) error {
	if err != nil || !a.cfg.Cluster {
		return err
	}
	return redisio.ValidateClusterName(name, kind)
}

// reject answers a request that failed validation; nothing reaches Redis.
func (a *rootActor) reject(ctx actor.Context, reply any) {
	sendIf(ctx, ctx.Sender(), reply)
}

func (a *rootActor) route(ctx actor.Context, k key) {
	e := a.keys[k]
	if e == nil {
		props := a.countProps
		if k.Kind.Held() {
			props = a.keyProps
		}
		// Not a child of root: protoactor's set of children keeps a pointer
		// to a removed child in its backing array, which would keep every
		// passivated key actor's memory alive. Root stops the live ones
		// itself when it stops (stopKeyActors).
		a.spawning = k
		e = &keyEntry{pid: ctx.ActorSystem().Root.Spawn(props)}
		a.spawning = key{}
		a.keys[k] = e
	}
	e.routed++
	ctx.Forward(e.pid)
}

// Closing tells the engine that its Client is closing. Root passes it to
// every key actor of a lock kind, which withdraws its waiters at once,
// answered ErrClosed, as Cancel withdraws one: no lock released after it
// (CloseAndRelease releases after it) goes to a waiter of the closing
// Client. It has no reply; what the same sender sends after it reaches
// each key actor after it.
type Closing struct{}

// KeyActorCount asks root how many key actors are alive; the reply is an
// int. It lets tests and diagnostics observe passivation.
type KeyActorCount struct{}

// KeyActorsOf asks root for the live actors of the name Name, one per kind
// in use (key actors, count actors); the reply is a []*actor.PID, empty
// when there are none. Asked in turn with WaiterCount, they tell a test
// (package wardentest) that a call reached the engine.
type KeyActorsOf struct {
	Name string
}

// WaiterCount asks a key actor or count actor how many calls are waiting
// in it (queued, not answered yet): for its lock, its permits, its latch's
// zero. The reply is an int.
type WaiterCount struct{}
