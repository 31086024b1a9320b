package actors

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// waitingActor is the part the key actor and the count actor share, each
// embedding one: the key they serve, their waiters, their timers, the
// Redis calls they wait for on stop, the passivation count, and the fault
// that ends them. Its methods are the skeleton both run around their own
// state: guard a Receive, fail on a panic, answer every waiter.
type waitingActor struct {
	key  key
	refs *engineRefs // the configuration, root (which spawned it: it is not root's child, rootActor.route), the subscriber, the renewer

	waiters waitQueue
	seen    uint64 // requests received (forwarded by root or sent straight), for the passivation handshake
	// fault is set once the actor failed (a panic: a bug); it then answers
	// every request with it until root stops it.
	fault *engineFault

	timer clockTimer
	idle  idleTimer
	// calls counts the actor's Redis calls running on the workers: a
	// stopping or failing actor waits for them (stopCalls).
	calls sync.WaitGroup
}

// engineFault is the error a failed actor answers with: the panic that
// failed it (one pointer in the actor, where an error takes two words).
type engineFault struct{ text string }

func (f *engineFault) Error() string { return f.text }

// engineRefs is what root gives each actor it spawns for a name: the
// engine's configuration, its other actors and its idle timers (shared,
// so a key actor spends no field on them). One per root, made as it
// starts and not changed after.
type engineRefs struct {
	cfg                       *Config
	root, subscriber, renewer *actor.PID
	idle                      *idleTimers
}

func newWaitingActor(k key, refs *engineRefs) waitingActor {
	return waitingActor{key: k, refs: refs}
}

// failer is the actor a waitingActor is part of, as its guard sees it.
type failer interface {
	fail(ctx actor.Context, r any)
}

// ticker is the actor a waitingActor is part of, as its timer sees it.
type ticker interface {
	onTick(ctx actor.Context)
}

// tickFor runs a's onTick when the timer's tick gen is the current one.
func (b *waitingActor) tickFor(ctx actor.Context, gen uint64, a ticker) {
	if b.timer.fired(gen) {
		a.onTick(ctx)
	}
}

// survive, deferred by Receive, turns a panic (a bug) into the actor's
// failure (its fail).
func (b *waitingActor) survive(ctx actor.Context, a failer) {
	if r := recover(); r != nil {
		a.fail(ctx, r)
	}
}

// stopCalls stops the timers and waits for the Redis call running, if
// any: the actor is stopping or failing.
func (b *waitingActor) stopCalls() {
	b.timer.stop()
	b.idle.stop()
	b.calls.Wait()
}

// failWith records a panic's fault, logs it with what the actor tells
// (told), and waits for the Redis call running.
func (b *waitingActor) failWith(r any, told string) {
	b.fault = &engineFault{text: fmt.Sprintf("warden: internal error in the engine's state for %s: %v", b.key.Name, r)}
	b.refs.cfg.Logger.Error(told, slog.Any("err", b.fault))
	b.stopCalls()
}

// answerFailed answers a request reaching the failed actor with its
// fault, counts it (seen) and reports that it was a request, which the
// actor then retires again for (rootActor.onRetire waits until it
// received all that were sent to it).
func (b *waitingActor) answerFailed(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *messages.Acquire:
		sendIf(ctx, ctx.Sender(), acquireFailed(m, b.fault))
	case *messages.Release:
		sendIf(ctx, ctx.Sender(), releaseFailed(m, b.fault, 0))
	case *messages.Watch:
		sendIf(ctx, ctx.Sender(), watchFailed(m, b.fault))
	case *messages.Extend:
		sendIf(ctx, ctx.Sender(), extendFailed(m, b.fault, 0))
	case *messages.Cancel: // its waiter was answered as the actor failed
	case *WaiterCount:
		ctx.Respond(0) // it answered every waiter as it failed
		return false
	default:
		return false
	}
	b.seen++
	return true
}

// idleFor asks root to passivate the actor when its idle timer's tick gen
// is due and the actor (idle) has nothing to do; t trims it on the way
// (nil for an actor that does not trim).
func (b *waitingActor) idleFor(ctx actor.Context, gen uint64, idle bool, t trimmer) {
	if b.idle.due(ctx, b.refs.idle, gen, idle, b.refs.cfg.IdleTimeout, t) {
		ctx.Send(b.refs.root, &passivate{Key: b.key, PID: ctx.Self(), Seen: b.seen})
	}
}

// cancel answers the waiter m withdraws with ErrCancelled and marks it
// so; it returns the waiter and whether it also left the queue (its
// attempt is not in flight), or nil when no such waiter waits.
func (b *waitingActor) cancel(ctx actor.Context, m *messages.Cancel) (*waiter, bool) {
	i := b.waiters.find(m.Owner, m.RequestID)
	if i < 0 {
		return nil, false
	}
	w := b.waiters.list[i]
	w.cancelled = true
	b.replyFailed(ctx, w, messages.ErrCancelled)
	if w.inflight {
		return w, false
	}
	b.waiters.removeAt(i)
	return w, true
}

// answerWaiters answers every waiter not answered yet with err, and
// forgets them all.
func (b *waitingActor) answerWaiters(ctx actor.Context, err error) {
	for _, w := range b.waiters.list {
		if !w.cancelled {
			b.replyFailed(ctx, w, err)
		}
	}
	b.waiters.reset()
}

// replyFailed answers w's Acquire with err.
func (b *waitingActor) replyFailed(ctx actor.Context, w *waiter, err error) {
	sendIf(ctx, w.sender, acquireFailed(w.req, err))
}
