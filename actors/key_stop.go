package actors

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// The key actor's stop and failure: answering everybody left, giving up
// fair waiters' places in Redis's queue, and dropping the state when the
// actor stops for any reason but Close, or fails.

// cleanUpLeft makes, at once and in order, the clean-ups the stopping
// actor leaves (a queued one would never run): the give-back of what the
// call in flight took for a waiter answered now (its result reached no
// turn), the queued undos and give-backs, and the Redis queue places of
// every fair waiter. The actor's Redis call has finished (stopCalls)
// before this runs. One bound covers them all, so a Redis that does not
// answer holds the stop up once, not once per clean-up.
func (a *keyActor) cleanUpLeft() {
	left := a.inflightLeft()
	for _, o := range a.ops {
		if o.cleanUp() {
			left = append(left, o) // an internal release is queued with its lease
		}
	}
	if a.io().perWaiter() {
		for _, w := range a.waiters.list {
			if w.refused || w.inflight {
				left = append(left, &op{kind: opLeaveQueue, w: w, owner: w.req.Owner})
			}
		}
	}
	if len(left) == 0 {
		return
	}
	c, cancel := a.refs.cfg.detachedContext(closingUndoTimeout)
	defer cancel()
	for _, o := range left {
		a.cleanUpNow(c, o)
	}
}

// inflightLeft is what the call in flight, whose result reached no turn,
// leaves to clean up: an acquire that took (or may have taken) the lock
// for its waiter, given back by its request ID; a clean-up that failed,
// made again. Its result is in o.done: the call has finished.
func (a *keyActor) inflightLeft() []*op {
	o := a.inflight
	if o == nil {
		return nil
	}
	d := &o.done
	var left []*op
	switch {
	case o.kind == opAttempt && (d.err != nil || d.acquire.Acquired):
		left = append(left, &op{kind: opUndo, owner: o.owner, reqID: o.reqID})
	case o.kind == opRelease && o.next != nil && (d.handoff.AcquireErr != nil || d.handoff.Acquire.Acquired):
		w := o.next
		left = append(left, &op{kind: opUndo, owner: w.req.Owner, reqID: w.req.RequestID})
	}
	if o.cleanUp() && d.err != nil {
		left = append(left, o) // cut by Close, say
	}
	return left
}

// cleanUpNow makes the clean-up o within c, a failure logged.
func (a *keyActor) cleanUpNow(c context.Context, o *op) {
	rio := a.lockIOFor(o.owner)
	var err error
	switch o.kind {
	case opUndo:
		_, err = rio.undo(c, o.owner, o.reqID)
	case opRelease:
		h := a.holdings[o.owner]
		if o.releasingLost {
			h = nil
		}
		_, _, _, err = rio.unlock(c, o.owner, o.reqID, releaseLease(o, h, a.refs.cfg.Watchdog))
	case opLeaveQueue:
		err = rio.leaveQueue(c, o.w)
	}
	if err != nil {
		a.refs.cfg.Logger.Warn("warden: a clean-up could not be made while stopping; what it leaves expires within its lease or deadline",
			slog.String("name", a.key.Name), slog.String("owner", o.owner), slog.Any("err", err))
	}
}

// onStopping answers everybody left. On Close that is ErrClosed, and the
// holdings are left to expire (Close releases nothing). Passivation stops
// only idle key actors, and a failed one has dropped its state already;
// any other stop drops the state as a failure does.
func (a *keyActor) onStopping(ctx actor.Context) {
	a.stopCalls()
	defer a.renewals.release() // after dropState: a pending registration is dropped without telling the renewer
	if a.refs.cfg.IO.Err() != nil {
		a.answerAll(ctx, messages.ErrClosed)
		return
	}
	a.dropState(ctx, fmt.Errorf("warden: the engine stopped the state of %s", a.key.Name))
}

// fail handles a panic in Receive (a bug): the key actor waits for its
// Redis call, undoes an acquire that call may have made, drops its
// state, and asks root to stop it. Until then it answers every request
// with the fault (receiveFailed), so no caller is left waiting.
func (a *keyActor) fail(ctx actor.Context, r any) {
	a.reclaim()
	a.failWith(r, "warden: key actor failed; its waiters and holders are told")
	// An acquire in flight, or the acquire a handoff made for the next
	// waiter, may have landed: dropState gives it back (cleanUpLeft).
	a.dropState(ctx, a.fault)
	a.renewals.release()
	a.retire(ctx)
}

// retire asks root, by way of the renewer and the subscriber, to stop the
// failed key actor once it received every request sent to it.
func (a *keyActor) retire(ctx actor.Context) {
	retireVia(ctx, a.refs.root, a.key, a.seen, a.refs.renewer, a.refs.subscriber)
}

// receiveFailed answers a request reaching a failed key actor and retires
// again: root may be waiting for it (rootActor.onRetire).
func (a *keyActor) receiveFailed(ctx actor.Context) {
	if a.answerFailed(ctx) {
		a.retire(ctx)
	}
}

// dropState ends the key actor's state: every waiter and queued release is
// answered with why, every holding reported lost, every renewal and the
// subscription stopped, so each lock expires within its lease.
func (a *keyActor) dropState(ctx actor.Context, why error) {
	for _, owner := range sortedKeys(a.holdings) {
		a.lose(ctx, owner, a.holdings[owner], fmt.Errorf("%w: %v", messages.ErrLockLost, why))
	}
	for _, owner := range sortedKeys(a.renewals.registered) {
		a.unregister(ctx, owner) // including a watchdog acquire still in flight
	}
	a.subs.dropAll(ctx, a.refs.subscriber)
	a.answerAll(ctx, why)
}

// answerAll answers every waiter and every release queued or in flight
// with err, and forgets them. The clean-ups left are made first (fair
// waiters give up their places in Redis's queue, or the lock's other
// waiters would wait for them); an internal release is one of them, with
// nobody to answer.
func (a *keyActor) answerAll(ctx actor.Context, err error) {
	a.cleanUpLeft()
	a.answerWaiters(ctx, err)
	for _, o := range a.ops {
		switch {
		case o.kind == opRelease && o.req != nil:
			a.respondRelease(ctx, o, nil, err, 0)
		case o.kind == opExtend:
			a.respondExtend(ctx, o, err)
		}
	}
	a.ops = nil
	if o := a.inflight; o != nil && o.kind == opRelease && o.req != nil {
		a.respondRelease(ctx, o, nil, fmt.Errorf("%w: outcome unknown", err), 0)
	}
	if o := a.inflight; o != nil && o.kind == opExtend {
		a.respondExtend(ctx, o, fmt.Errorf("%w: outcome unknown", err))
	}
	a.inflight = nil
}
