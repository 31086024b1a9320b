package actors

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/redisio"
)

const (
	// receiveTimeout is how long the reader waits before it pings the
	// connection to find out whether it is still alive.
	receiveTimeout = 5 * time.Second
	// reconnectPause is the first pause between reconnect attempts; it
	// doubles while Redis stays unreachable, up to maxReconnectPause.
	reconnectPause    = 50 * time.Millisecond
	maxReconnectPause = time.Second
)

// pubsubCommand is one SUBSCRIBE or UNSUBSCRIBE to send.
type pubsubCommand struct {
	subscribe bool
	channel   string
}

// channelState is one subscribed channel: who gets its messages (in the
// order they subscribed) and whether Redis confirmed the subscription.
type channelState struct {
	pids      []*actor.PID
	confirmed bool
}

// subscriberActor owns the engine's single pub/sub connection: it
// subscribes a channel on its first key actor's request and unsubscribes
// after the last one leaves, fans each message out to the channel's key
// actors, and after a reconnect tells every key actor to retry, since
// messages sent meanwhile are lost.
type subscriberActor struct {
	cfg      *Config
	ps       redisio.PubSub
	cancel   context.CancelFunc
	ioCtx    context.Context // the reader's context; cancel ends it
	channels map[string]*channelState
	commands []pubsubCommand
	sending  bool
	down     bool
	// reconnect paces a reader that stopped on a connection error: it is
	// started again when the timer fires, pause after the error.
	reconnect clockTimer
	pause     time.Duration
	io        sync.WaitGroup
}

var _ actor.Actor = (*subscriberActor)(nil)

func subscriberProps(cfg *Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &subscriberActor{cfg: cfg, channels: map[string]*channelState{},
			pause: reconnectPause}
	}, actor.WithDispatcher(cfg.Workers), withMailbox)
}

// Receive handles one message; every state change of the subscriber
// happens here.
func (a *subscriberActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "subscriber")
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *subscribe:
		a.onSubscribe(ctx, m)
	case *unsubscribe:
		a.onUnsubscribe(m)
	case *pubsubCommandDone:
		a.sending = false
		if m.Err != nil {
			a.cfg.Logger.Log(context.Background(), a.cfg.retryLevel(), "warden: pub/sub command failed; resubscribed on reconnect",
				slog.Any("err", m.Err))
		}
	case *pubsubEvent:
		a.pause = reconnectPause
		a.onEvent(ctx, m.Event)
	case *relay:
		ctx.Send(m.To, m.Msg)
	case *crash:
		panic("warden: subscriber told to crash")
	case *pubsubDown:
		if !a.down {
			a.down = true
			a.cfg.Logger.Log(context.Background(), a.cfg.retryLevel(), "warden: pub/sub connection lost; reconnecting",
				slog.Any("err", m.Err))
		}
		if m.ReaderStopped {
			a.reconnect.arm(a.cfg.Clock, ctx.ActorSystem(), ctx.Self(), a.cfg.Clock.Now().Add(a.pause),
				func(g uint64) any { return &tick{Gen: g} })
			a.pause = min(2*a.pause, maxReconnectPause)
		}
	case *tick:
		if a.reconnect.fired(m.Gen) {
			a.read(ctx)
		}
	case *actor.Stopping:
		a.reconnect.stop()
		a.cancel()
		_ = a.ps.Close()
		a.io.Wait()
		return
	}
	a.flush(ctx)
}

func (a *subscriberActor) start(ctx actor.Context) {
	c, cancel := context.WithCancel(a.cfg.IO)
	a.cancel = cancel
	a.ps = a.cfg.NewPubSub(c)
	a.ioCtx = c
	a.read(ctx)
}

// read starts the reader: a loop on the engine's workers that passes every
// event to the actor. On a connection error it tells the actor and stops;
// the actor starts it again after a pause (the next Receive reconnects), so
// the reader never sleeps on a timer of its own.
func (a *subscriberActor) read(ctx actor.Context) {
	sys, self, ps, c := ctx.ActorSystem(), ctx.Self(), a.ps, a.ioCtx
	a.io.Add(1)
	a.cfg.Workers.Schedule(func() {
		defer a.io.Done()
		for {
			ev, err := ps.Receive(c, receiveTimeout)
			switch {
			case err == nil:
				sys.Root.Send(self, &pubsubEvent{Event: ev})
			case c.Err() != nil || redisio.IsClosed(err):
				return
			case redisio.IsTimeout(err):
				if perr := ps.Ping(c); perr != nil {
					sys.Root.Send(self, &pubsubDown{Err: perr})
				}
			default:
				sys.Root.Send(self, &pubsubDown{Err: err, ReaderStopped: true})
				return
			}
		}
	})
}

func (a *subscriberActor) onSubscribe(ctx actor.Context, m *subscribe) {
	st := a.channels[m.Channel]
	if st == nil {
		st = &channelState{}
		a.channels[m.Channel] = st
		a.commands = append(a.commands, pubsubCommand{subscribe: true, channel: m.Channel})
	}
	if !slices.ContainsFunc(st.pids, m.PID.Equal) {
		st.pids = append(st.pids, m.PID)
	}
	if st.confirmed {
		ctx.Send(m.PID, &subscribed{Channel: m.Channel})
	}
}

func (a *subscriberActor) onUnsubscribe(m *unsubscribe) {
	st := a.channels[m.Channel]
	if st == nil {
		return
	}
	st.pids = slices.DeleteFunc(st.pids, m.PID.Equal)
	if len(st.pids) == 0 {
		delete(a.channels, m.Channel)
		a.commands = append(a.commands, pubsubCommand{channel: m.Channel})
	}
}

func (a *subscriberActor) onEvent(ctx actor.Context, ev redisio.Event) {
	if a.down {
		// The connection is back and resubscribed: whatever was published
		// meanwhile is lost, so every key actor retries.
		a.down = false
		a.cfg.Logger.Info("warden: pub/sub connection restored")
		for _, ch := range sortedKeys(a.channels) {
			for _, pid := range a.channels[ch].pids {
				ctx.Send(pid, &retry{})
			}
		}
	}
	st := a.channels[ev.Channel]
	switch ev.Kind {
	case redisio.EventSubscribed:
		// Every confirmation is passed on, not only the first: after a quick
		// unsubscribe and subscribe, an earlier SUBSCRIBE's confirmation can
		// arrive before the current one takes effect, and the key actors must
		// retry again once it has.
		if st != nil {
			st.confirmed = true
			for _, pid := range st.pids {
				ctx.Send(pid, &subscribed{Channel: ev.Channel})
			}
		}
	case redisio.EventMessage:
		if st != nil {
			for _, pid := range st.pids {
				ctx.Send(pid, &unlocked{Channel: ev.Channel, Payload: ev.Payload})
			}
		}
	}
}

// flush sends the next queued command, one at a time and in order, on a
// goroutine the actor owns.
func (a *subscriberActor) flush(ctx actor.Context) {
	if a.sending || len(a.commands) == 0 {
		return
	}
	cmd := a.commands[0]
	a.commands = a.commands[1:]
	a.sending = true
	sys, self, ps, cfg := ctx.ActorSystem(), ctx.Self(), a.ps, a.cfg
	a.io.Add(1)
	cfg.Workers.Schedule(func() {
		defer a.io.Done()
		c, cancel := cfg.ioContext()
		defer cancel()
		var err error
		if cmd.subscribe {
			err = ps.Subscribe(c, cmd.channel)
		} else {
			err = ps.Unsubscribe(c, cmd.channel)
		}
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		sys.Root.Send(self, &pubsubCommandDone{Err: err})
	})
}
