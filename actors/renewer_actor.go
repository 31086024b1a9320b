package actors

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// renewBatch caps the locks renewed by one script call.
const renewBatch = 1000

// registration is one watchdog-mode holding the renewer keeps alive. A key
// actor makes it (newRegistration) and sends it as a register message; the
// renewer owns it from then on.
type registration struct {
	// held and slot (held's hash slot on a cluster) never change, so a
	// tick's Redis calls may read them off the actor.
	held redisio.Held
	slot int
	pid  *actor.PID
	// renewedAt is when the last renewal that succeeded was sent (at first,
	// when the key actor registered the holding, before its acquire set
	// the TTL, not when the renewer received it). Redis keeps the lock at
	// least until renewedAt + Watchdog, less ttlGrain (its clock counts
	// whole milliseconds).
	renewedAt time.Time
	// expired is set once the key actor was told the lock expired unrenewed.
	expired bool
	// ended is set once the holding is unregistered (or registered anew).
	ended bool
	// paused is set while the key actor wants the holding not renewed
	// (its unlock in flight or failed); its expiry is still followed.
	paused bool
	owner  string
	kind   messages.Kind
}

// newRegistration is the registration of owner's holding held, of key
// actor pid and lock kind kind, registered at at: before the acquire it is
// sent ahead of, the earliest the TTL that acquire sets can start.
func newRegistration(held redisio.Held, owner string, pid *actor.PID, at time.Time, kind messages.Kind) *registration {
	r := &registration{}
	r.reset(held, owner, pid, at, kind)
	return r
}

// reset makes r the registration newRegistration would make, for a key
// actor reusing one the renewer never heard of.
func (r *registration) reset(held redisio.Held, owner string, pid *actor.PID, at time.Time, kind messages.Kind) {
	*r = registration{held: held, owner: owner, pid: pid, renewedAt: at, kind: kind}
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
	cfg  *Config
	regs map[redisio.Held]*registration
	// order holds the registrations in the order they came: a tick goes
	// through them in this fixed order (not map order, so a simulation
	// seed replays) without sorting. Ended ones are dropped once they are
	// half of it.
	order []*registration
	ended int
	timer clockTimer
	// expiry fires when the oldest renewal runs out (expiryTick), so that
	// an owner whose renewals fail hears of it then, not at the next tick,
	// up to a renewal period later.
	expiry   clockTimer
	inflight bool
	// failing is set while renewal calls fail.
	failing failStreak
	io      sync.WaitGroup
}

var _ actor.Actor = (*renewerActor)(nil)

func renewerProps(cfg *Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &renewerActor{cfg: cfg, regs: map[redisio.Held]*registration{}}
	}, actor.WithDispatcher(cfg.Workers), withMailbox)
}

// Receive handles one message; every state change of the renewer happens
// here.
func (a *renewerActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "renewer")
	if got := a.cfg.renewerGot; got != nil {
		switch m := ctx.Message().(type) {
		case *register, *pause, *unregister:
			got(m)
		}
	}
	switch m := ctx.Message().(type) {
	case *register:
		a.register(ctx, (*registration)(m))
	case *unregister:
		if r := (*registration)(m); a.regs[r.held] == r {
			delete(a.regs, r.held)
			a.end(r)
		}
	case *pause:
		if r := (*registration)(m); a.regs[r.held] == r {
			r.paused = true
		}
	case *tick:
		if a.timer.fired(m.Gen) {
			a.expire(ctx)
			a.renew(ctx)
		}
	case *expiryTick:
		if a.expiry.fired(m.Gen) {
			a.expire(ctx)
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
		a.expiry.stop()
		a.io.Wait()
		return
	}
	a.settle(ctx)
}

func (a *renewerActor) register(ctx actor.Context, r *registration) {
	if old := a.regs[r.held]; old != nil {
		a.end(old)
	}
	if a.cfg.Cluster {
		r.slot = redisio.Slot(r.held.Name)
	}
	a.regs[r.held] = r
	a.order = append(a.order, r)
	if a.timer.t == nil {
		// The first renewal is due a renewal period after the registration
		// was made, not after the renewer heard of it (its key actor holds
		// a new registration back for registerDelay): a lock's renewals
		// keep the schedule they would have had.
		a.timer.set(ctx, a.cfg.Clock, r.renewedAt.Add(a.cfg.Watchdog/3))
	}
	if at := r.renewedAt.Add(a.cfg.Watchdog - ttlGrain); a.expiry.t == nil || at.UnixNano() < a.expiry.at {
		a.armExpiry(ctx, at)
	}
}

// end marks r ended and drops the ended registrations from order once
// they are half of it.
func (a *renewerActor) end(r *registration) {
	r.ended = true
	if a.ended++; 2*a.ended >= len(a.order) {
		a.order = slices.DeleteFunc(a.order, func(r *registration) bool { return r.ended })
		a.ended = 0
	}
}

// settle keeps the tick armed while there is something to renew. A tick
// that finds nothing is simply not re-armed, so a lock taken and released
// in a loop does not create and cancel a timer every time.
func (a *renewerActor) settle(ctx actor.Context) {
	if len(a.regs) > 0 && a.timer.t == nil {
		a.timer.arm(a.cfg.Clock, ctx.ActorSystem(), ctx.Self(), a.cfg.Clock.Now().Add(a.cfg.Watchdog/3),
			func(g uint64) any { return &tick{Gen: g} })
	}
}

func (a *renewerActor) renew(ctx actor.Context) {
	if a.inflight || len(a.regs) == 0 {
		return // the previous tick is still running; this one is skipped
	}
	batch := make([]*registration, 0, len(a.regs))
	for _, r := range a.order {
		if !r.ended && !r.paused {
			batch = append(batch, r)
		}
	}
	if len(batch) == 0 {
		return // every holding is paused
	}
	if a.cfg.Cluster {
		// A script's keys must share a slot on a cluster: the batch is
		// ordered by slot, so each call below takes one slot's locks.
		batch = bySlot(batch)
	}
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
				for i := start + 1; i < end; i++ {
					if batch[i].slot != batch[start].slot {
						end = i
						break
					}
				}
			}
			held := make([]redisio.Held, 0, end-start)
			for _, r := range batch[start:end] {
				held = append(held, r.held)
			}
			// A renewal helps as long as it lands within the lease it extends
			// (sent at least a watchdog/3 after the last success). Its bound
			// leaves room for a fresh connection's handshake on a slow
			// network: at a third of the watchdog, a call that timed out
			// closed its connection, and on a link whose round trip is over a
			// ninth of the watchdog every later call, dialling anew, timed
			// out too.
			c, cancel := context.WithTimeout(cfg.IO, min(redisio.IOTimeout, 2*cfg.Watchdog/3))
			began := time.Now()
			ok, err := cfg.Scripts.Renew(c, cfg.Redis, held, cfg.Watchdog)
			cancel()
			if cfg.RenewalObserved != nil {
				cfg.RenewalObserved(time.Since(began), kindsOf(batch[start:end]), err)
			}
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
			d.Err = messages.Join(d.Err, err)
			start = end
		}
		sys.Root.Send(self, d)
	})
}

func (a *renewerActor) onRenewDone(ctx actor.Context, d *renewDone) {
	// Renewal errors never stop renewal: the next tick tries again.
	a.failing.note(a.cfg, d.Err, "warden: renewal failed; retrying every tick", "warden: renewal succeeds again")
	for i, outcome := range d.Outcomes {
		reg := d.Batch[i]
		if reg.ended {
			continue // unregistered meanwhile
		}
		switch outcome {
		case renewedOK:
			if d.Sent.After(reg.renewedAt) {
				reg.renewedAt = d.Sent
			}
		case renewedGone:
			ctx.Send(reg.pid, &renewalGone{Owner: reg.owner})
		}
	}
	a.expire(ctx)
}

// expire tells the key actor of every holding no renewal has reached for a
// whole watchdog timeout: Redis has let it expire (or lost it). It runs on
// every tick, even while a renewal call hangs, so the owner hears of it
// when the lease runs out, not when the call gives up. It arms the expiry
// timer for the next holding to run out (register arms it for a holding
// that comes later and runs out sooner).
func (a *renewerActor) expire(ctx actor.Context) {
	now := a.cfg.Clock.Now()
	var next time.Time
	for _, reg := range a.order {
		if reg.ended || reg.expired {
			continue
		}
		if at := reg.renewedAt.Add(a.cfg.Watchdog - ttlGrain); now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		reg.expired = true
		ctx.Send(reg.pid, &renewalExpired{Owner: reg.owner})
	}
	if next.IsZero() {
		a.expiry.stop()
		return
	}
	a.armExpiry(ctx, next)
}

func (a *renewerActor) armExpiry(ctx actor.Context, at time.Time) {
	a.expiry.arm(a.cfg.Clock, ctx.ActorSystem(), ctx.Self(), at, func(g uint64) any { return &expiryTick{Gen: g} })
}

// kindsOf lists the lock kinds of regs, each once, in the order of
// messages.Kind.
func kindsOf(regs []*registration) []messages.Kind {
	var seen [256]bool
	n := 0
	for _, r := range regs {
		if !seen[r.kind] {
			seen[r.kind] = true
			n++
		}
	}
	kinds := make([]messages.Kind, 0, n)
	for k, ok := range seen {
		if ok {
			kinds = append(kinds, messages.Kind(k))
		}
	}
	return kinds
}

// expiryTick is the renewer's expiry timer's message.
type expiryTick struct {
	Gen uint64
}

// bySlot returns batch ordered by hash slot, in arrival order within a
// slot: a counting sort, linear in the batch (a comparison sort of 100,000
// holdings took ~145 ms).
func bySlot(batch []*registration) []*registration {
	var next [redisio.SlotCount + 1]int // next[s+1] counts slot s, then next[s] is where slot s goes
	for _, r := range batch {
		next[r.slot+1]++
	}
	for s := 1; s < len(next); s++ {
		next[s] += next[s-1]
	}
	out := make([]*registration, len(batch))
	for _, r := range batch {
		out[next[r.slot]] = r
		next[r.slot]++
	}
	return out
}
