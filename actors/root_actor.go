package actors

import (
	"errors"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// rootActor is the engine's entry point: it spawns the subscriber, the
// renewer and, on first use of a (name, kind), its key actor (a count
// actor for the counting kinds); routes every messages.* request sent to
// it to the key actor, publishing each live one in the engine's Routes so
// that a sender may skip this hop; and stops a key actor that reports
// itself idle if nothing reached it since.
type rootActor struct {
	cfg *Config
	// routes is the table of live key actors (Config.Routes), whose
	// entries only root adds and removes.
	routes *Routes
	// retiring holds the failed actors whose routes root closed while
	// requests sent straight to them were still on their way (by PID ID),
	// with how many they will have received then.
	retiring map[string]*retiring
	refs     *engineRefs
	// keyProps and countProps spawn every key actor and count actor: one
	// Props each for all names, their producers making the actor for the
	// key route spawns (spawning). A producer runs inside the Spawn call,
	// in root's turn; protoactor calls it again only to restart an actor
	// after a panic, which every engine actor's guard (survive) recovers.
	keyProps, countProps *actor.Props
	spawning             key
	ids                  *actorIDs // the key and count actors' PID IDs
}

// retiring is a failed actor root waits to have received what was sent
// to it before it stops it.
type retiring struct {
	pid  *actor.PID
	sent uint64
}

var _ actor.Actor = (*rootActor)(nil)

// RootProps returns the props of an engine's root actor.
func RootProps(cfg Config) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.holdings = &atomic.Uint64{}
	if cfg.Routes == nil {
		cfg.Routes = &Routes{}
	}
	cfg.Routes.cluster = cfg.Cluster
	if cfg.SharedDeadlines > 0 {
		cfg.calls = &callDeadlines{window: cfg.SharedDeadlines}
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &rootActor{cfg: &cfg, routes: cfg.Routes}
	}, actor.WithDispatcher(cfg.Workers), withMailbox), nil
}

// Receive handles one message; every state change of root happens here.
func (a *rootActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "root")
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.refs = &engineRefs{cfg: a.cfg, root: ctx.Self(), subscriber: ctx.Spawn(subscriberProps(a.cfg)),
			renewer: ctx.Spawn(renewerProps(a.cfg)), idle: newIdleTimers(a.cfg.Clock, ctx.ActorSystem())}
		a.keyProps = actor.PropsFromProducer(func() actor.Actor { return newKeyActor(a.spawning, a.refs) },
			actor.WithDispatcher(a.cfg.Workers), withMailbox)
		a.countProps = actor.PropsFromProducer(func() actor.Actor { return newCountActor(a.spawning, a.refs) },
			actor.WithDispatcher(a.cfg.Workers), withMailbox)
		a.ids = newActorIDs(ctx.Self().Id)
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
		// Only at the count of what reached the actor: a request sent
		// straight to it since then makes closeAt fail.
		if e := a.routes.load(m.Key); e != nil && e.pid.Equal(m.PID) {
			if !e.closeAt(m.Seen) {
				a.routes.refused.Add(1)
				break
			}
			a.routes.passivated.Add(1)
			a.forget(m.Key, e)
			ctx.Poison(m.PID)
		}
	case *actor.Stopping:
		a.stopKeyActors(ctx)
		a.refs.idle.stop()
	case *KeyActorCount:
		ctx.Respond(a.routes.count())
	case *KeyActorsOf:
		var pids []*actor.PID
		a.routes.each(func(k key, e *keyEntry) {
			if k.Name == m.Name {
				pids = append(pids, e.pid)
			}
		})
		ctx.Respond(pids)
	case *Closing:
		a.routes.each(func(k key, e *keyEntry) {
			if k.Kind.Held() {
				ctx.Send(e.pid, m)
			}
		})
	case *crash:
		switch m.Actor {
		case "renewer":
			ctx.Send(a.refs.renewer, m)
		case "subscriber":
			ctx.Send(a.refs.subscriber, m)
		default:
			if e := a.routes.load(m.Key); e != nil {
				ctx.Send(e.pid, m)
			}
		}
	case *retire:
		a.onRetire(ctx, m)
	}
}

// onRetire stops a key actor or count actor that failed. Requests that
// reached it are answered with its fault as Poison drains its mailbox; the
// next request for the name starts a fresh actor. Its route is closed
// first; when requests sent straight to it are still on their way, root
// waits for the actor to say it received them (it retires again on each
// request a failed actor receives), so that none of them lands after it
// stopped.
func (a *rootActor) onRetire(ctx actor.Context, m *retire) {
	if e := a.routes.load(m.Key); e != nil && e.pid.Equal(m.PID) {
		sent := e.close()
		a.forget(m.Key, e)
		if m.Seen < sent {
			if a.retiring == nil {
				a.retiring = map[string]*retiring{}
			}
			a.retiring[m.PID.Id] = &retiring{pid: e.pid, sent: sent}
			return
		}
		ctx.Poison(m.PID)
		return
	}
	if r := a.retiring[m.PID.Id]; r != nil && r.pid.Equal(m.PID) && m.Seen >= r.sent {
		delete(a.retiring, m.PID.Id)
		ctx.Poison(m.PID)
	}
}

// forget drops k's entry e, which root has closed.
func (a *rootActor) forget(k key, e *keyEntry) {
	a.routes.remove(k, e)
}

// stopKeyActors stops every live key actor, and every failed one still
// retiring, and waits until each has stopped (answered its waiters), as
// protoactor does for children before their parent stops. Their routes
// are closed first: what a sender sends from then on goes to root.
func (a *rootActor) stopKeyActors(ctx actor.Context) {
	futures := make([]actor.Future, 0, a.routes.count()+len(a.retiring))
	a.routes.each(func(_ key, e *keyEntry) {
		e.close()
		futures = append(futures, ctx.ActorSystem().Root.StopFuture(e.pid))
	})
	a.routes.clear()
	for id, r := range a.retiring {
		futures = append(futures, ctx.ActorSystem().Root.StopFuture(r.pid))
		delete(a.retiring, id)
	}
	for _, f := range futures {
		_ = f.Wait()
	}
}

// validate adds to a request's own checks (err, from its Validate) the
// slot rule of a Redis Cluster (validateFor).
func (a *rootActor) validate(err error, name string, kind messages.Kind) error {
	return validateFor(a.cfg.Cluster, err, key{name, kind})
}

// reject answers a request that failed validation; nothing reaches Redis.
func (a *rootActor) reject(ctx actor.Context, reply any) {
	sendIf(ctx, ctx.Sender(), reply)
}

// route forwards the request to k's actor, sender kept, spawning it on
// first use and publishing it in the routes.
func (a *rootActor) route(ctx actor.Context, k key) {
	e := a.routes.load(k)
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
		pid, err := ctx.ActorSystem().Root.SpawnNamed(props, a.ids.next())
		for errors.Is(err, actor.ErrNameExists) { // an ID of the user's own actors
			pid, err = ctx.ActorSystem().Root.SpawnNamed(props, a.ids.next())
		}
		a.spawning = key{}
		e = &keyEntry{pid: pid}
		a.routes.store(k, e)
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
