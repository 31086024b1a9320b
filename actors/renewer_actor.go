package actors

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/redisio"
)

// renewBatch caps the locks renewed by one script call.
const renewBatch = 1000

// registration is one watchdog-mode holding the renewer keeps alive.
type registration struct {
	pid *actor.PID
	// renewedAt is when the last renewal that succeeded was sent (at first,
	// when the holding registered, which is before its acquire set the
	// TTL). Redis keeps the lock at least until renewedAt + Watchdog.
	renewedAt time.Time
	// expired is set once the key actor was told the lock expired unrenewed.
	expired bool
	owner   string
}

// renewal is one holding in a tick's batch.
type renewal struct {
	Held  redisio.Held
	Owner string
	PID   *actor.PID
}

// renewOutcome is what one tick learned of one holding.
type renewOutcome uint8

const (
	renewedOK renewOutcome = iota
	renewedGone
	renewedUnknown // the call failed: Redis unreachable or erroring
)

// renewerActor keeps every watchdog-mode holding of the engine alive: every
// Watchdog/3 it renews all of them with one script call per batch (per
// slot on a cluster), tells the key actor of each holding found gone, and
// of each it could not renew for a whole watchdog timeout, which Redis has
// then expired.
type renewerActor struct {
	cfg      *Config
	regs     map[redisio.Held]*registration
	timer    clockTimer
	inflight bool
	io       sync.WaitGroup
}

var _ actor.Actor = (*renewerActor)(nil)

func renewerProps(cfg *Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &renewerActor{cfg: cfg, regs: map[redisio.Held]*registration{}, timer: clockTimer{clock: cfg.Clock}}
	}, actor.WithDispatcher(cfg.Workers))
}

// Receive handles one message; every state change of the renewer happens
// here.
func (a *renewerActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "renewer")
	switch m := ctx.Message().(type) {
	case *register:
		a.regs[m.Held] = &registration{pid: m.PID, owner: m.Owner, renewedAt: a.cfg.Clock.Now()}
	case *unregister:
		delete(a.regs, m.Held)
	case *tick:
		if a.timer.fired(m.Gen) {
			a.expire(ctx)
			a.renew(ctx)
		}
	case *renewDone:
		a.inflight = false
		a.onRenewDone(ctx, m)
	case *relay:
		ctx.Send(m.To, m.Msg)
	case *crash:
		panic("warden: renewer told to crash")
	case *actor.Stopping:
		a.timer.stop()
		a.io.Wait()
		return
	}
	a.settle(ctx)
}

// settle keeps the tick armed while there is something to renew. A tick
// that finds nothing is simply not re-armed, so a lock taken and released
// in a loop does not create and cancel a timer every time.
func (a *renewerActor) settle(ctx actor.Context) {
	if len(a.regs) > 0 && a.timer.t == nil {
		a.timer.arm(ctx.ActorSystem(), ctx.Self(), a.cfg.Clock.Now().Add(a.cfg.Watchdog/3),
			func(g uint64) any { return &tick{Gen: g} })
	}
}

func (a *renewerActor) renew(ctx actor.Context) {
	if a.inflight || len(a.regs) == 0 {
		return // the previous tick is still running; this one is skipped
	}
	batch := make([]renewal, 0, len(a.regs))
	for h, r := range a.regs {
		batch = append(batch, renewal{Held: h, Owner: r.owner, PID: r.pid})
	}
	// In a fixed order (not map order), so a simulation seed replays. On a
	// cluster a script's keys must share a slot: the batch is ordered by
	// slot first, so each call below takes one slot's locks.
	cluster := a.cfg.Cluster
	slices.SortFunc(batch, func(x, y renewal) int {
		if cluster {
			if c := redisio.Slot(x.Held.Name) - redisio.Slot(y.Held.Name); c != 0 {
				return c
			}
		}
		return compareHeld(x.Held, y.Held)
	})
	a.inflight = true
	cfg, sys, self := a.cfg, ctx.ActorSystem(), ctx.Self()
	sent := cfg.Clock.Now()
	a.io.Add(1)
	cfg.Workers.Schedule(func() {
		defer a.io.Done()
		d := &renewDone{Batch: batch, Sent: sent, Outcomes: make([]renewOutcome, 0, len(batch))}
		for start := 0; start < len(batch); {
			end := min(start+renewBatch, len(batch))
			if cfg.Cluster {
				slot := redisio.Slot(batch[start].Held.Name)
				for i := start + 1; i < end; i++ {
					if redisio.Slot(batch[i].Held.Name) != slot {
						end = i
						break
					}
				}
			}
			held := make([]redisio.Held, 0, end-start)
			for _, r := range batch[start:end] {
				held = append(held, r.Held)
			}
			// A renewal helps as long as it lands within the lease it extends
			// (sent at least a watchdog/3 after the last success). Its bound
			// leaves room for a fresh connection's handshake on a slow
			// network: at a third of the watchdog, a call that timed out
			// closed its connection, and on a link whose round trip is over a
			// ninth of the watchdog every later call, dialling anew, timed
			// out too.
			c, cancel := context.WithTimeout(cfg.IO, min(redisio.IOTimeout, 2*cfg.Watchdog/3))
			ok, err := cfg.Scripts.Renew(c, cfg.Redis, held, cfg.Watchdog)
			cancel()
			for i := range held {
				switch {
				case err != nil:
					d.Outcomes = append(d.Outcomes, renewedUnknown)
				case ok[i]:
					d.Outcomes = append(d.Outcomes, renewedOK)
				default:
					d.Outcomes = append(d.Outcomes, renewedGone)
				}
			}
			d.Err = errors.Join(d.Err, err)
			start = end
		}
		sys.Root.Send(self, d)
	})
}

func (a *renewerActor) onRenewDone(ctx actor.Context, d *renewDone) {
	if d.Err != nil {
		// Renewal errors never stop renewal: the next tick tries again.
		a.cfg.Logger.Warn("warden: renewal failed; retrying next tick", slog.Any("err", d.Err))
	}
	for i, outcome := range d.Outcomes {
		b := d.Batch[i]
		reg := a.regs[b.Held]
		if reg == nil || !reg.pid.Equal(b.PID) {
			continue // unregistered meanwhile
		}
		switch outcome {
		case renewedOK:
			if d.Sent.After(reg.renewedAt) {
				reg.renewedAt = d.Sent
			}
		case renewedGone:
			ctx.Send(reg.pid, &renewalGone{Owner: b.Owner})
		}
	}
	a.expire(ctx)
}

// expire tells the key actor of every holding no renewal has reached for a
// whole watchdog timeout: Redis has let it expire (or lost it). It runs on
// every tick, even while a renewal call hangs, so the owner hears of it
// when the lease runs out, not when the call gives up.
func (a *renewerActor) expire(ctx actor.Context) {
	now := a.cfg.Clock.Now()
	var gone []redisio.Held
	for h, reg := range a.regs {
		if !reg.expired && now.Sub(reg.renewedAt) >= a.cfg.Watchdog {
			gone = append(gone, h)
		}
	}
	slices.SortFunc(gone, compareHeld)
	for _, h := range gone {
		reg := a.regs[h]
		reg.expired = true
		ctx.Send(reg.pid, &renewalExpired{Owner: reg.owner})
	}
}

// compareHeld orders holdings by name, then field.
func compareHeld(x, y redisio.Held) int {
	return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Field, y.Field))
}
