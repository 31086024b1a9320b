package actors

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
)

// idleTimers is one engine's clock timer for the idle timers of all its
// key actors and count actors: a heap of the ticks due, and one clock
// timer armed for the earliest. A timer of its own would cost each live
// actor a runtime timer and a callback (about 180 bytes of heap for every
// name in use); an entry here costs 32 bytes while it is due. It is not an
// actor, as the clock's own timers are not: it holds no lock state, only
// when to send each actor its idleTick, and the actor decides in its turn
// what the tick means (idleTimer.due). The entry of an actor that stopped
// stays until it is due and is then dropped, holding that actor's memory
// for at most one idle timeout.
type idleTimers struct {
	clock clockwork.Clock
	sys   *actor.ActorSystem
	// base is what an entry's due time counts from: durations since it
	// keep the monotonic reading of a real clock in an int64.
	base time.Time

	mu      sync.Mutex
	due     idleHeap
	t       clockwork.Timer // armed for due[0], nil when due is empty
	at      time.Duration   // when t fires, since base
	stopped bool
}

// idleEntry is one idle timer's tick due at `at`: sent unless the timer
// was stopped or re-armed since (its gen moved on).
type idleEntry struct {
	at  time.Duration
	gen uint64
	it  *idleTimer
	pid *actor.PID
}

type idleHeap []idleEntry

func (h idleHeap) Len() int           { return len(h) }
func (h idleHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h idleHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idleHeap) Push(x any)        { *h = append(*h, x.(idleEntry)) }
func (h *idleHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = idleEntry{}
	*h = old[:len(old)-1]
	return e
}

func newIdleTimers(clock clockwork.Clock, sys *actor.ActorSystem) *idleTimers {
	return &idleTimers{clock: clock, sys: sys, base: clock.Now()}
}

// add schedules it's tick of generation gen to pid at d since base.
func (ts *idleTimers) add(it *idleTimer, gen uint64, pid *actor.PID, d time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.stopped {
		return
	}
	heap.Push(&ts.due, idleEntry{at: d, gen: gen, it: it, pid: pid})
	if ts.t == nil || d < ts.at {
		ts.armLocked(d)
	}
}

// armLocked (re)arms the clock timer for d since base.
func (ts *idleTimers) armLocked(d time.Duration) {
	if ts.t != nil {
		ts.t.Stop()
	}
	ts.at = d
	ts.t = ts.clock.AfterFunc(max(d-ts.clock.Since(ts.base), 0), ts.fire)
}

// fire sends every tick due by now whose timer is still armed for it, and
// arms the clock timer for the next.
func (ts *idleTimers) fire() {
	var sends []idleEntry
	ts.mu.Lock()
	if ts.stopped {
		ts.mu.Unlock()
		return
	}
	now := ts.clock.Since(ts.base)
	for len(ts.due) > 0 && ts.due[0].at <= now {
		if e := heap.Pop(&ts.due).(idleEntry); e.it.gen.Load() == e.gen {
			sends = append(sends, e)
		}
	}
	if len(ts.due) > 0 {
		ts.armLocked(ts.due[0].at) // stops a timer an add armed meanwhile
	} else {
		if ts.t != nil {
			ts.t.Stop()
			ts.t = nil
		}
		if cap(ts.due) > 64 {
			ts.due = nil // the room a burst of idle names took goes back
		}
	}
	ts.mu.Unlock()
	for _, e := range sends {
		ts.sys.Root.Send(e.pid, &idleTick{Gen: e.gen})
	}
}

// stop drops every tick due and the clock timer: the engine is stopping.
func (ts *idleTimers) stop() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.stopped = true
	ts.due = nil
	if ts.t != nil {
		ts.t.Stop()
		ts.t = nil
	}
}

// idleTimer tells its actor when it has been idle for a while: first, for
// an actor that trims, when to trim (trimAfter, or the idle timeout if
// shorter), then when it may passivate (the idle timeout). It stays armed
// through busy spells, so that an actor that turns busy and idle again on
// every request (a lock taken and released) costs no timer operation: a
// tick that comes early re-arms it for the rest of the current idle
// spell, and one that comes while the actor is busy leaves it unarmed
// until the next idle spell begins. Its ticks come from the engine's
// idleTimers.
type idleTimer struct {
	// gen is the generation of the tick armed; the engine's idleTimers
	// read it to drop a tick of a timer stopped or re-armed since.
	gen atomic.Uint64
	// since is when the current idle spell began, counted from the
	// idleTimers' base; resting tells that a spell is under way (the
	// actor is idle).
	since   time.Duration
	resting bool
	// armed tells that a tick is due (of generation gen).
	armed bool
	// trims tells that the actor trims (trimmer) once in each idle spell;
	// trimmed that the current idle spell's trim ran.
	trims, trimmed bool
}

// trimmer is an actor that lets go of what it keeps for its next requests
// once idle for a while (keyActor.trim).
type trimmer interface{ trim() }

// arm schedules the timer's next tick at `at` since ts's base.
func (it *idleTimer) arm(ts *idleTimers, self *actor.PID, at time.Duration) {
	it.armed = true
	ts.add(it, it.gen.Add(1), self, at)
}

// stop disarms the timer; a tick already sent is stale from now on.
func (it *idleTimer) stop() {
	if it.armed {
		it.armed = false
		it.gen.Add(1)
	}
}

// track records whether the actor is idle now (after each message it
// handles), arming the timer for the idle spell's next tick unless it is
// armed already.
func (it *idleTimer) track(ctx actor.Context, ts *idleTimers, idle bool, d time.Duration) {
	if !idle {
		it.resting, it.trimmed = false, false
		return
	}
	if !it.resting {
		it.resting, it.since = true, ts.clock.Since(ts.base)
	}
	if !it.armed {
		it.arm(ts, ctx.Self(), it.next(d))
	}
}

// trimAt is when, since the idleTimers' base, the current idle spell's
// trim is due, and whether there is one (a trim not run yet).
func (it *idleTimer) trimAt(d time.Duration) (time.Duration, bool) {
	return it.since + min(trimAfter, d), it.trims && !it.trimmed
}

// next is when, since the idleTimers' base, the current idle spell's next
// tick is due: its trim, then its end, d after it began.
func (it *idleTimer) next(d time.Duration) time.Duration {
	if at, ok := it.trimAt(d); ok {
		return at
	}
	return it.since + d
}

// due handles an idle tick of generation gen: once the actor (idle now)
// has been idle until its trim is due it trims (t), once per spell; it
// reports whether the actor has been idle for d, and otherwise re-arms
// the timer for the current idle spell's next tick, if there is one.
func (it *idleTimer) due(ctx actor.Context, ts *idleTimers, gen uint64, idle bool, d time.Duration, t trimmer) bool {
	if !it.armed || gen != it.gen.Load() {
		return false
	}
	it.armed = false
	if !idle || !it.resting {
		return false
	}
	now := ts.clock.Since(ts.base)
	if at, ok := it.trimAt(d); ok && now >= at {
		it.trimmed = true
		t.trim()
	}
	if now < it.since+d {
		it.arm(ts, ctx.Self(), it.next(d))
		return false
	}
	return true
}
