package actors

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// The key actor's stop and failure: answering everybody left, giving up
// fair waiters' places in Redis's queue, and dropping the state when the
// actor stops for any reason but Close, or fails.

// leaveQueues gives up, at once and in order, the Redis queue places of every
// fair waiter (the actor is stopping: a queued leave would never run).
// The actor's Redis call has finished (stopCalls) before this runs. One
// bound covers every leave, so a Redis that does not answer holds the
// stop up once, not once per waiter.
func (a *keyActor) leaveQueues() {
	if !a.io().perWaiter() {
		return
	}
	leaving := make([]*waiter, 0, len(a.waiters.list)+len(a.ops))
	for _, w := range a.waiters.list {
		if w.refused || w.inflight {
			leaving = append(leaving, w)
		}
	}
	for _, o := range a.ops {
		if o.kind == opLeaveQueue {
			leaving = append(leaving, o.w) // left the local queue, not yet Redis's
		}
	}
	if o := a.inflight; o != nil && o.kind == opLeaveQueue {
		leaving = append(leaving, o.w) // its answer never came back: cut by Close
	}
	if len(leaving) == 0 {
		return
	}
	c, cancel := a.refs.cfg.detachedContext(closingUndoTimeout)
	defer cancel()
	for _, w := range leaving {
		if err := a.io().leaveQueue(c, w); err != nil {
			a.refs.cfg.Logger.Warn("warden: a fair waiter could not leave the queue; its place expires at its deadline",
				slog.String("name", a.key.Name), slog.String("owner", w.req.Owner), slog.Any("err", err))
		}
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
	if o := a.inflight; o != nil {
		// An acquire in flight, or the acquire a handoff made for the next
		// waiter, may have landed: undo it.
		var owner, reqID string
		switch {
		case o.kind == opAttempt:
			owner, reqID = o.owner, o.reqID
		case o.kind == opRelease && o.next != nil:
			owner, reqID = o.next.req.Owner, o.next.req.RequestID
		}
		if owner != "" {
			c, cancel := a.refs.cfg.ioContext()
			if _, err := a.lockIOFor(owner).undo(c, owner, reqID); err != nil {
				a.refs.cfg.Logger.Warn("warden: could not undo the acquire in flight; it expires within its lease",
					slog.String("name", a.key.Name), slog.Any("err", err))
			}
			cancel()
		}
	}
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
// with err, and forgets them. Fair waiters first give up their places in
// Redis's queue, or the lock's other waiters would wait for them.
func (a *keyActor) answerAll(ctx actor.Context, err error) {
	a.leaveQueues()
	a.answerWaiters(ctx, err)
	for _, o := range a.ops {
		switch o.kind {
		case opRelease:
			a.respondRelease(ctx, o, nil, err, 0)
		case opExtend:
			a.respondExtend(ctx, o, err)
		}
	}
	a.ops = nil
	if o := a.inflight; o != nil && o.kind == opRelease {
		a.respondRelease(ctx, o, nil, fmt.Errorf("%w: outcome unknown", err), 0)
	}
	if o := a.inflight; o != nil && o.kind == opExtend {
		a.respondExtend(ctx, o, fmt.Errorf("%w: outcome unknown", err))
	}
	a.inflight = nil
}
