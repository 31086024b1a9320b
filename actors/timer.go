package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
)

// clockTimer is one actor's one-shot timer on the engine clock. Its
// callback only sends a message carrying the arm generation to the actor,
// so a tick that raced a Stop or a re-arm is recognised as stale.
type clockTimer struct {
	clock clockwork.Clock
	t     clockwork.Timer
	gen   uint64
	at    time.Time
}

// arm (re)starts the timer to fire at `at`; the message is msg(gen).
func (ct *clockTimer) arm(sys *actor.ActorSystem, self *actor.PID, at time.Time, msg func(gen uint64) any) {
	if ct.t != nil && ct.at.Equal(at) {
		return
	}
	ct.stop()
	ct.gen++
	ct.at = at
	m := msg(ct.gen)
	d := at.Sub(ct.clock.Now())
	if d < 0 {
		d = 0
	}
	ct.t = ct.clock.AfterFunc(d, func() { sys.Root.Send(self, m) })
}

// stop cancels the timer; a tick already sent is stale from now on.
func (ct *clockTimer) stop() {
	if ct.t != nil {
		ct.t.Stop()
		ct.t = nil
		ct.gen++
	}
}

// fired reports whether a tick of generation gen is the current one, and
// marks the timer as no longer armed if so.
func (ct *clockTimer) fired(gen uint64) bool {
	if ct.t == nil || gen != ct.gen {
		return false
	}
	ct.t = nil
	return true
}

// set arms the timer for a tick at `at`, or stops it when at is zero.
func (ct *clockTimer) set(ctx actor.Context, at time.Time) {
	if at.IsZero() {
		ct.stop()
		return
	}
	ct.arm(ctx.ActorSystem(), ctx.Self(), at, func(g uint64) any { return &tick{Gen: g} })
}

// trimAfter is how long an actor is idle before its idle timer's first
// tick lets it trim what it keeps for its next requests (idleTimer.trim,
// keyActor.trim); passivation comes at the idle timeout.
const trimAfter = 200 * time.Millisecond

// idleTimer tells its actor when it has been idle for a while: first, for
// an actor with a trim, when to trim (trimAfter, or the idle timeout if
// shorter), then when it may passivate (the idle timeout). It stays armed
// through busy spells, so that an actor that turns busy and idle again on
// every request (a lock taken and released) costs no timer operation: a
// tick that comes early re-arms it for the rest of the current idle
// spell, and one that comes while the actor is busy leaves it unarmed
// until the next idle spell begins.
type idleTimer struct {
	clockTimer
	// trim, when set, runs once in each idle spell, trimAfter into it.
	trim func()
	// since is when the current idle spell began; zero while busy.
	since time.Time
	// trimmed tells that the current idle spell's trim ran.
	trimmed bool
}

// track records whether the actor is idle now (after each message it
// handles), arming the timer for the idle spell's next tick unless it is
// armed already.
func (it *idleTimer) track(ctx actor.Context, idle bool, d time.Duration) {
	if !idle {
		it.since, it.trimmed = time.Time{}, false
		return
	}
	if it.since.IsZero() {
		it.since = it.clock.Now()
	}
	if it.t == nil {
		it.arm(ctx.ActorSystem(), ctx.Self(), it.next(d), func(g uint64) any { return &idleTick{Gen: g} })
	}
}

// trimAt is when the current idle spell's trim is due, or zero when there
// is none (no trim, or it ran).
func (it *idleTimer) trimAt(d time.Duration) time.Time {
	if it.trim == nil || it.trimmed {
		return time.Time{}
	}
	return it.since.Add(min(trimAfter, d))
}

// next is when the current idle spell's next tick is due: its trim, then
// its end, d after it began.
func (it *idleTimer) next(d time.Duration) time.Time {
	if at := it.trimAt(d); !at.IsZero() {
		return at
	}
	return it.since.Add(d)
}

// due handles an idle tick of generation gen: once the actor (idle now)
// has been idle until its trim is due it trims, once per spell; it
// reports whether the actor has been idle for d, and otherwise re-arms
// the timer for the current idle spell's next tick, if there is one.
func (it *idleTimer) due(ctx actor.Context, gen uint64, idle bool, d time.Duration) bool {
	if !it.fired(gen) {
		return false
	}
	if !idle || it.since.IsZero() {
		return false
	}
	now := it.clock.Now()
	if at := it.trimAt(d); !at.IsZero() && !now.Before(at) {
		it.trimmed = true
		it.trim()
	}
	if now.Before(it.since.Add(d)) {
		it.arm(ctx.ActorSystem(), ctx.Self(), it.next(d), func(g uint64) any { return &idleTick{Gen: g} })
		return false
	}
	return true
}
