package actors

import (
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// keyEntry is root's record of one live key actor.
type keyEntry struct {
	pid    *actor.PID
	routed uint64
}

// rootActor is the engine's entry point: it spawns the subscriber, the
// renewer and, on first use of a (name, kind), its key actor; routes every
// messages.* request to the key actor; and stops a key actor that reports
// itself idle if nothing was routed to it since.
type rootActor struct {
	cfg        *Config
	keys       map[key]*keyEntry
	subscriber *actor.PID
	renewer    *actor.PID
}

var _ actor.Actor = (*rootActor)(nil)

// RootProps returns the props of an engine's root actor.
func RootProps(cfg Config) (*actor.Props, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &rootActor{cfg: &cfg, keys: map[key]*keyEntry{}}
	}, actor.WithDispatcher(cfg.Workers), actor.WithSupervisor(keySupervisor{})), nil
}

// Receive handles one message; every state change of root happens here.
func (a *rootActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.subscriber = ctx.Spawn(subscriberProps(a.cfg))
		a.renewer = ctx.Spawn(renewerProps(a.cfg))
	case *messages.Acquire:
		if err := m.Validate(); err != nil {
			a.reject(ctx, &messages.AcquireFailed{Name: m.Name, Kind: m.Kind, Owner: m.Owner, RequestID: m.RequestID, Err: err})
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *messages.Release:
		if err := m.Validate(); err != nil {
			a.reject(ctx, &messages.ReleaseFailed{Name: m.Name, Kind: m.Kind, Owner: m.Owner, RequestID: m.RequestID, Err: err})
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *messages.Cancel:
		if m.Validate() == nil {
			a.route(ctx, key{m.Name, m.Kind})
		}
	case *messages.Watch:
		if err := m.Validate(); err != nil {
			a.reject(ctx, &messages.Watched{Name: m.Name, Kind: m.Kind, Owner: m.Owner, Err: err})
			return
		}
		a.route(ctx, key{m.Name, m.Kind})
	case *passivate:
		if e := a.keys[m.Key]; e != nil && e.pid.Equal(m.PID) && e.routed == m.Seen {
			delete(a.keys, m.Key)
			ctx.Poison(m.PID)
		}
	case *KeyActorCount:
		ctx.Respond(len(a.keys))
	case *crash:
		if e := a.keys[m.Key]; e != nil {
			ctx.Send(e.pid, m)
		}
	case *actor.Terminated:
		// A key actor that failed was stopped (see keySupervisor); the next
		// request for its name starts a fresh one.
		for k, e := range a.keys {
			if e.pid.Equal(m.Who) {
				delete(a.keys, k)
			}
		}
	}
}

// reject answers a request that failed validation; nothing reaches Redis.
func (a *rootActor) reject(ctx actor.Context, reply any) {
	if s := ctx.Sender(); s != nil {
		ctx.Send(s, reply)
	}
}

func (a *rootActor) route(ctx actor.Context, k key) {
	e := a.keys[k]
	if e == nil {
		e = &keyEntry{pid: ctx.SpawnPrefix(keyActorProps(a.cfg, k, a.subscriber, a.renewer), keyActorPrefix)}
		a.keys[k] = e
	}
	e.routed++
	ctx.Forward(e.pid)
}

// keyActorPrefix starts the ID of every key actor.
const keyActorPrefix = "key"

// keySupervisor is root's supervision of its children. A key actor that
// fails (a panic: a bug) is stopped, not restarted: a restart would lose
// its waiters and holdings silently, while stopping lets it answer every
// waiter and tell every holder (see keyActor.onStopping). The subscriber
// and renewer are restarted, as by protoactor's default.
type keySupervisor struct{}

var _ actor.SupervisorStrategy = keySupervisor{}

func (keySupervisor) HandleFailure(sys *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason, message any) {
	if strings.Contains(child.Id, "/"+keyActorPrefix) {
		sys.Logger().Error("warden: key actor failed; its waiters and holders are told", slog.Any("reason", reason))
		supervisor.StopChildren(child)
		return
	}
	actor.DefaultSupervisorStrategy().HandleFailure(sys, supervisor, child, rs, reason, message)
}

// KeyActorCount asks root how many key actors are alive; the reply is an
// int. It lets tests and diagnostics observe passivation.
type KeyActorCount struct{}
