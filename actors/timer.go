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
	t   clockwork.Timer
	gen uint64
	at  int64 // the armed tick's time, as UnixNano (time.Time takes 24 bytes)
}

// arm (re)starts the timer to fire at `at` on clock; the message is
// msg(gen).
func (ct *clockTimer) arm(clock clockwork.Clock, sys *actor.ActorSystem, self *actor.PID, at time.Time, msg func(gen uint64) any) {
	if ct.t != nil && ct.at == at.UnixNano() {
		return
	}
	ct.stop()
	ct.gen++
	ct.at = at.UnixNano()
	m := msg(ct.gen)
	d := at.Sub(clock.Now())
	if d < 0 {
		d = 0
	}
	ct.t = clock.AfterFunc(d, func() { sys.Root.Send(self, m) })
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

// set arms the timer for a tick at `at` on clock, or stops it when at is
// zero.
func (ct *clockTimer) set(ctx actor.Context, clock clockwork.Clock, at time.Time) {
	if at.IsZero() {
		ct.stop()
		return
	}
	ct.arm(clock, ctx.ActorSystem(), ctx.Self(), at, func(g uint64) any { return &tick{Gen: g} })
}

// trimAfter is how long an actor is idle before its idle timer's first
// tick lets it trim what it keeps for its next requests (idleTimer.due,
// keyActor.trim); passivation comes at the idle timeout.
const trimAfter = 200 * time.Millisecond
