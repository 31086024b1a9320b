package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// key names one key actor: a lock name and its kind.
type key struct {
	Name string
	Kind messages.Kind
}

// keyActor owns one lock name for this process: who of this process holds
// it and how often, who waits for it, which holdings the renewer keeps
// alive, and the one Redis request in flight.
type keyActor struct {
	waitingActor
	// args are the name's script arguments for the kinds on the reentrant
	// lock's scripts (usesLockArgs), made by the key actor's first request
	// (keyActor.start) and again after a trim; io hands them on.
	args *redisio.LockArgs

	holdings map[string]*holding
	renewals keyRenewals // the owners the renewer renews or follows (key_renewal.go)
	// waitingActor.waiters are FIFO; the head is the one that waits on
	// Redis (each fair waiter waits).
	ops      []*op // releases and undos, served before attempts
	inflight *op
	spare    *op // finished ops kept for reuse (newOp), linked by op.spareNext
	// spareHolding is the holding a release ended last, kept for reuse
	// (newHolding): nothing refers to an ended holding.
	spareHolding *holding
	spares       int32 // how many ops spare holds
	// handoffs counts the handoffs since an ordinary attempt acquired
	// (maxHandoffs).
	handoffs int32
	subs     channelSet // channels subscribed (key_subscriptions.go)

	// groups, for a group lock, are each owner's values (sorted), from its
	// acquire or release until it holds, waits for and asks nothing; nil
	// for every other kind.
	groups groupValues
}

var _ actor.Actor = (*keyActor)(nil)

// newKeyActor makes the key actor of k (rootActor.keyProps).
func newKeyActor(k key, refs *engineRefs) actor.Actor {
	a := &keyActor{
		// The maps are made on first use, and dropped again by trim.
		waitingActor: newWaitingActor(k, refs),
	}
	a.idle.trims = true
	if k.Kind == messages.KindGroupLock {
		a.groups = groupValues{} // the other kinds' stays nil: nothing to make per key actor
	}
	if f := refs.cfg.keyActorMade; f != nil {
		f(a)
	}
	return a
}

// io is the key's Redis calls (its kind's, with its script arguments),
// made for each use rather than kept: the key actor's own fields hold
// what it needs.
func (a *keyActor) io() *lockIO {
	return &lockIO{cfg: a.refs.cfg, name: a.key.Name, kind: a.key.Kind, args: a.args}
}

// Receive handles one message; every state change of the key actor happens
// here.
func (a *keyActor) Receive(ctx actor.Context) {
	if a.fault != nil {
		a.receiveFailed(ctx)
		return
	}
	defer a.survive(ctx, a)
	switch m := ctx.Message().(type) {
	case *messages.Acquire:
		a.seen++
		a.onAcquire(ctx, m)
	case *messages.Release:
		a.seen++
		if err := a.groupValues(m.Owner, m.Values); err != nil {
			sendIf(ctx, ctx.Sender(), releaseFailed(m, err, 0))
			break
		}
		o := a.newOp()
		o.kind, o.req, o.sender, o.owner, o.reqID = opRelease, m, ctx.Sender(), m.Owner, m.RequestID
		a.ops = append(a.ops, o)
	case *messages.Cancel:
		a.seen++
		a.onCancel(ctx, m)
	case *Closing:
		a.onClosing(ctx)
	case *actor.Stopping:
		a.onStopping(ctx)
		return
	case *WaiterCount:
		ctx.Respond(a.waiters.waiting())
		return
	case *messages.Watch:
		a.seen++
		a.onWatch(ctx, m)
	case *messages.Extend:
		a.seen++
		a.ops = append(a.ops, &op{kind: opExtend, ext: m, sender: ctx.Sender(), owner: m.Owner, reqID: m.RequestID})
	case *opDone:
		a.onOpDone(ctx, m)
	case *subscribed:
		a.waiters.wakeChannel(a.io(), m.Channel, "")
	case *unlocked:
		a.waiters.wakeChannel(a.io(), m.Channel, m.Payload)
	case *retry:
		a.waiters.wakeRetry(a.io())
	case *renewalGone:
		a.onRenewalGone(ctx, m)
	case *crash:
		panic(fmt.Sprintf("warden: key actor %q told to crash", a.key.Name))
	case *renewalExpired:
		a.onRenewalExpired(ctx, m)
	case *registrationsDue:
		a.onRegistrationsDue(ctx)
	case *tick:
		a.tickFor(ctx, m.Gen, a)
	case *idleTick:
		a.idleFor(ctx, m.Gen, a.isIdle(), a)
		return
	default:
		return
	}
	a.pump(ctx)
	a.settle(ctx)
}

func (a *keyActor) onAcquire(ctx actor.Context, m *messages.Acquire) {
	if err := a.groupValues(m.Owner, m.Values); err != nil {
		sendIf(ctx, ctx.Sender(), acquireFailed(m, err))
		return
	}
	w := a.waiters.push(m, ctx.Sender(), a.refs.cfg.Clock.Now())
	if a.io().polls() {
		a.spinPollFor(w)
	}
}

// spinPollFor brings the sleeping head spin waiter's next poll forward to
// within the longest pause of w's back-off, w having just queued behind
// it: w waits on that poll, never longer than its own back-off would.
func (a *keyActor) spinPollFor(w *waiter) {
	head := a.waiters.list[0]
	if head == w || head.ready || head.wakeAt.IsZero() {
		return
	}
	if due := a.refs.cfg.Clock.Now().Add(w.req.BackOff.OrDefault().Max); due.Before(head.wakeAt) {
		head.wakeAt = due
	}
}

func (a *keyActor) onCancel(ctx actor.Context, m *messages.Cancel) {
	if w, left := a.cancel(ctx, m); left {
		a.leaveQueue(w)
	}
}

// onClosing withdraws every waiter, answered ErrClosed, as a Cancel
// withdraws one: no lock released from now on goes to a waiter of the
// closing Client (an attempt in flight that takes it gives it back), and
// a fair waiter gives its place in the queue up.
func (a *keyActor) onClosing(ctx actor.Context) {
	var idle []*waiter
	for _, w := range a.waiters.list {
		if !w.cancelled {
			w.cancelled = true
			a.replyFailed(ctx, w, messages.ErrClosed)
		}
		if !w.inflight {
			idle = append(idle, w)
		}
	}
	for _, w := range idle {
		a.waiters.remove(w)
		a.leaveQueue(w)
	}
}

func (a *keyActor) onAttemptDone(ctx actor.Context, d *opDone) {
	w := d.op.w
	w.inflight = false
	owner := w.req.Owner
	switch {
	case d.err != nil:
		a.attemptUnknown(ctx, d)
	case d.acquire.Acquired && a.endedInFlight(d.op) && d.acquire.HoldCount > 1:
		a.attemptReentryLost(ctx, d)
	case d.acquire.Acquired && a.holdings[owner] == nil && w.req.Lease > 0 &&
		!a.refs.cfg.Clock.Now().Before(a.io().leaseEnd(time.Time{}, w.req.Lease, d.op.started)):
		a.attemptOutlived(ctx, d)
	case d.acquire.AlreadyHeld:
		a.attemptAlreadyHeld(ctx, d)
	case d.acquire.Acquired:
		a.attemptAcquired(ctx, d)
	default:
		a.attemptRefused(ctx, d)
	}
	a.syncRenewal(ctx, owner)
}

// attemptUnknown settles an attempt whose outcome is unknown (its request
// failed without an answer).
func (a *keyActor) attemptUnknown(ctx actor.Context, d *opDone) {
	w := d.op.w
	owner := w.req.Owner
	// The outcome is unknown: the script may have run and only its reply
	// was lost. Undo it if it was applied; never assume. A fair
	// waiter's attempt may also have taken a place in the queue: give
	// it up.
	a.ops = append(a.ops, &op{kind: opUndo, owner: owner, reqID: w.req.RequestID})
	if h := a.holdings[owner]; h != nil && h.id == d.op.holding && !h.expiresAt.IsZero() && !a.io().nonReentrant() {
		h.uncertain = true // (a non-reentrant holder's attempt never touches its lease)
	}
	if a.endedInFlight(d.op) {
		// The owner was told its holding was lost while this reentry
		// was in flight; the holds it had may still be in Redis.
		a.releaseLost(owner, w.req.RequestID, d.op.count, d.op.holdLease)
	}
	if a.io().perWaiter() {
		w.refused = true
		a.leaveQueue(w)
	}
	a.waiters.remove(w)
	if !w.cancelled {
		a.replyFailed(ctx, w, a.refs.cfg.closedOr(d.err))
	}
}

// attemptReentryLost settles a reentry Redis applied whose holding had
// ended here while it was in flight.
func (a *keyActor) attemptReentryLost(ctx actor.Context, d *opDone) {
	w := d.op.w
	owner := w.req.Owner
	// A reentry whose holding's lease ran out while it was in flight,
	// and the owner was told: Redis applied it before the lease ended,
	// so the holds the owner was told it lost are still there. Give
	// them all back rather than hand the owner a holding it was told
	// is gone.
	a.acquiredLost(ctx, d, fmt.Errorf("%w: the lease of %s held by %s ran out while a reentry was in flight",
		messages.ErrLockLost, a.key.Name, owner))
}

// acquiredLost gives back the holds an acquire took in Redis (releaseLost)
// and fails its waiter, unless answered already, with err.
func (a *keyActor) acquiredLost(ctx actor.Context, d *opDone, err error) {
	w := d.op.w
	a.releaseLost(w.req.Owner, w.req.RequestID, d.acquire.HoldCount, w.req.Lease)
	a.waiters.remove(w)
	if !w.cancelled {
		a.replyFailed(ctx, w, err)
	}
}

// attemptOutlived settles an acquire whose explicit lease ran out before
// its answer came.
func (a *keyActor) attemptOutlived(ctx actor.Context, d *opDone) {
	w := d.op.w
	// A first acquire (or a reentry whose holding ended while it was
	// in flight, which Redis ran as a first acquire) with a lease
	// shorter than its round trip: it ran out before the answer came,
	// and another process may hold the lock by now.
	// The owner is not handed a lock it never held at a moment it
	// could know of; Redis ran the acquire after it was sent, so the
	// hold may still be there: it is given back.
	a.acquiredLost(ctx, d, fmt.Errorf("%w: the lease of %s (%v) ran out before the acquire's answer came",
		messages.ErrLockLost, a.key.Name, w.req.Lease))
}

// attemptAlreadyHeld settles a non-reentrant lock its owner holds already.
func (a *keyActor) attemptAlreadyHeld(ctx actor.Context, d *opDone) {
	w := d.op.w
	owner := w.req.Owner
	// A non-reentrant lock its owner holds already: refused at once,
	// nothing changed in Redis.
	a.waiters.remove(w)
	a.leaveQueue(w)
	if !w.cancelled {
		a.replyFailed(ctx, w, fmt.Errorf("%w: %s %s, owner %s", messages.ErrAlreadyHeld, a.key.Kind, a.key.Name, owner))
	}
}

// attemptAcquired settles an acquire that took the lock or a hold of it.
func (a *keyActor) attemptAcquired(ctx actor.Context, d *opDone) {
	w := d.op.w
	owner := w.req.Owner
	h := a.holdAcquired(ctx, d)
	a.waiters.remove(w)
	if a.io().shared() {
		a.waiters.wakeHead() // a shared hold: the next reader may join at once
	}
	if w.cancelled {
		// The requester gave up while the attempt was in flight.
		a.ops = append(a.ops, &op{kind: opRelease, owner: owner, reqID: w.req.RequestID + ":cancel"})
		return
	}
	if w.req.Watch {
		h.watch(w.sender)
	}
	sendIf(ctx, w.sender, &messages.Acquired{Name: w.req.Name, Kind: w.req.Kind, Owner: owner,
		RequestID: w.req.RequestID, HoldCount: h.count, Holding: h.id, Token: d.acquire.Token})
}

// attemptRefused settles an attempt refused: the lock is held elsewhere.
func (a *keyActor) attemptRefused(ctx actor.Context, d *opDone) {
	w := d.op.w
	if !w.try && !w.refused {
		w.refused, w.channel = true, a.io().channel(w.req.Owner)
	}
	switch {
	case w.cancelled:
		a.waiters.remove(w)
		a.leaveQueue(w)
	case w.try || a.expired(w, a.refs.cfg.Clock.Now()):
		a.waiters.remove(w)
		a.leaveQueue(w)
		a.replyFailed(ctx, w, messages.ErrTimeout)
	case w.woken:
		// Freed while the attempt was in flight: try again now. A
		// handoff's acquire may have been the attempt of a waiter
		// that slept (not ready): it is made due here, or the wake-up
		// is lost and it sleeps until its look again.
		w.woken, w.ready = false, true
	default:
		w.ready = false
		w.wakeAt = a.refs.cfg.Clock.Now().Add(a.sleep(w, d.acquire.PTTL))
	}
}

func (a *keyActor) onReleaseDone(ctx actor.Context, d *opDone) {
	o := d.op
	switch {
	case a.retryClosing(d):
		// A give-back Close cut: queued again, within the closing bound.
	case o.releasingLost:
		a.lostReleased(ctx, d)
	case d.err != nil:
		a.releaseUnknown(ctx, d)
	case !d.held:
		a.releaseNotHeld(ctx, d)
	case d.remaining > 0 && a.endedInFlight(o):
		a.releaseOutlived(ctx, d)
	default:
		a.released(ctx, d)
	}
	a.syncRenewal(ctx, o.owner)
}

// holdingID is the id of owner's holding, 0 if it holds nothing here.
func (a *keyActor) holdingID(owner string) uint64 {
	if h := a.holdings[owner]; h != nil {
		return h.id
	}
	return 0
}

// lostReleased settles a release queued by releaseLost: of holds Redis
// may keep of a holding already ended here.
func (a *keyActor) lostReleased(ctx actor.Context, d *opDone) {
	o := d.op
	h := a.holdings[o.owner]
	// Give-backs run before any later request of their owner's, so
	// the owner has no holding yet; should it have one, that holding's
	// holds in Redis were just counted down: tell it.
	if h != nil && d.err == nil && d.held {
		a.lose(ctx, o.owner, h, fmt.Errorf("%w: a give-back of an ended holding of %s released a hold of %s's next",
			messages.ErrLockLost, a.key.Name, o.owner))
	}
	if d.err == nil && !d.held {
		// Redis has none of the owner's holds left: the owner's other
		// lost-hold releases queued behind this one would find none either.
		a.ops = slices.DeleteFunc(a.ops, func(q *op) bool { return q.releasingLost && q.owner == o.owner })
	}
	if d.err == nil && d.held && d.remaining == 0 {
		a.waiters.wakeHead()
	}
	a.respondRelease(ctx, o, nil, d.err, 0)
}

// releaseUnknown settles a release whose outcome is unknown (its request
// failed without an answer).
func (a *keyActor) releaseUnknown(ctx actor.Context, d *opDone) {
	o := d.op
	h, id := a.holdings[o.owner], a.holdingID(o.owner)
	// Unknown outcome: the holding is not known released. It stays, so
	// its owner hears when it is lost. Renewal is already off for a
	// last hold, so the lock expires within its lease: an explicit
	// lease at its end (onTick), a watchdog holding when the renewer
	// finds no renewal reached it for a watchdog timeout
	// (renewalExpired).
	if h != nil && h.id == o.holding {
		if !h.expiresAt.IsZero() {
			h.uncertain = true
		}
		if h.count <= 1 && h.lease == 0 {
			h.unrenewed = true
		}
	}
	if a.endedInFlight(o) {
		// The owner was told its holding was lost while this unlock
		// was in flight; the other holds may still be in Redis.
		a.releaseLost(o.owner, o.reqID, o.count, o.holdLease)
	}
	a.respondRelease(ctx, o, nil, a.refs.cfg.closedOr(d.err), id)
}

// releaseNotHeld settles a release that found the owner holding nothing
// in Redis.
func (a *keyActor) releaseNotHeld(ctx actor.Context, d *opDone) {
	o := d.op
	h, id := a.holdings[o.owner], a.holdingID(o.owner)
	if h != nil {
		a.lose(ctx, o.owner, h, fmt.Errorf("%w: %s found not held by %s at unlock", messages.ErrLockLost, a.key.Name, o.owner))
	}
	a.respondRelease(ctx, o, nil, fmt.Errorf("%w: %s %s, owner %s", messages.ErrNotHeld, a.key.Kind, a.key.Name, o.owner), id)
}

// releaseOutlived settles the unlock of one hold of a holding whose lease
// ran out while the unlock was in flight, the owner told.
func (a *keyActor) releaseOutlived(ctx actor.Context, d *opDone) {
	o := d.op
	// Redis applied the unlock before the lease ended, so the other
	// holds are still there: give them back too.
	a.releaseLost(o.owner, o.reqID, d.remaining, o.holdLease)
	a.respondRelease(ctx, o, nil, fmt.Errorf("%w: the lease of %s held by %s ran out while an unlock was in flight",
		messages.ErrLockLost, a.key.Name, o.owner), o.holding)
}

// released settles a release Redis applied: the holding ends with its
// last hold, or counts one hold fewer.
func (a *keyActor) released(ctx actor.Context, d *opDone) {
	o := d.op
	h, id := a.holdings[o.owner], a.holdingID(o.owner)
	if a.releaseLostAgain(o, h, d.remaining) {
		return // answered by the last of them
	}
	if d.remaining == 0 {
		if h != nil {
			delete(a.holdings, o.owner)
			a.keepHolding(h)
		}
		// The head waiter need not wait for the unlock message's round
		// trip through pub/sub, unless this unlock evens the odds for
		// other processes after a streak of handoffs, or handed the
		// lock on (the handoff's acquire was the head's attempt: if
		// refused, it waits for the unlock message or its look again).
		if !o.endsStreak && o.next == nil {
			a.waiters.wakeHead()
		}
	} else if h != nil {
		a.releasedOne(h, d)
	}
	a.respondRelease(ctx, o, &messages.Released{Remaining: d.remaining}, nil, id)
}

// releasedOne counts, in h, the unlock of one of its holds that left
// d.remaining.
func (a *keyActor) releasedOne(h *holding, d *opDone) {
	h.count = d.remaining
	switch {
	case h.lease > 0 && a.io().unlockRefreshesLease():
		h.expiresAt = a.io().leaseEnd(time.Time{}, h.lease, d.op.started) // the unlock refreshed the lease
		h.uncertain = false
	case len(h.reads) > 0:
		// A read unlock dropped the newest read hold. Should the
		// holds left all have explicit leases where some had the
		// watchdog, the renewals may have kept them past their
		// leases: at their end they are given back (onTick), as
		// every read holding's are.
		h.reads = h.reads[:min(len(h.reads), h.count)]
		h.settleReads()
	}
}

// sleep is how long a refused waiter w waits for a message before it tries
// again anyway, given the PTTL the refusal reported.
func (a *keyActor) sleep(w *waiter, pttl time.Duration) time.Duration {
	if a.io().polls() {
		// A spin lock's waiter hears of no unlock: it polls again after
		// its back-off's pause, whatever the holder's lease. The waiters
		// behind it share that poll, which never pauses longer than the
		// longest pause of any of their back-offs.
		pause := w.poll.pause(w)
		for _, o := range a.waiters.list {
			pause = min(pause, o.req.BackOff.OrDefault().Max)
		}
		return pause
	}
	wait := pttl
	if wait <= 0 {
		// No TTL on the key (a foreign writer) or just expired: look again
		// after a bounded pause rather than spin or hang.
		wait = min(a.refs.cfg.Watchdog/3, 100*time.Millisecond)
		if pttl == 0 && !a.io().perWaiter() {
			wait = time.Millisecond
		}
	}
	if a.io().perWaiter() {
		// A fair waiter's next attempt refreshes its place in the queue
		// (fair_place.go); it also bounds the wait should its wake-up
		// message be lost.
		wait = min(wait, a.refs.cfg.fairLookAgain(w.req))
	}
	return wait
}

// leaveQueue gives up a waiter's place in Redis's queue (a fair waiter that was
// refused there) when it leaves without the lock.
func (a *keyActor) leaveQueue(w *waiter) {
	if a.io().perWaiter() && w.refused {
		a.ops = append(a.ops, &op{kind: opLeaveQueue, w: w, owner: w.req.Owner, reqID: w.req.RequestID})
	}
}

// respondRelease answers a Release with ok, or with a ReleaseFailed
// carrying err. A release nobody waits for (the engine's own, of a
// cancelled acquire, or one sent without a sender) only logs a failure.
func (a *keyActor) respondRelease(ctx actor.Context, o *op, ok *messages.Released, err error, holding uint64) {
	if o.req == nil || o.sender == nil {
		if err != nil && !errors.Is(err, messages.ErrNotHeld) {
			a.refs.cfg.Logger.Warn("warden: release failed with nobody to tell; the lock expires within its lease",
				slog.String("name", a.key.Name), slog.String("owner", o.owner), slog.Any("err", err))
		}
		return
	}
	if err != nil {
		sendIf(ctx, o.sender, releaseFailed(o.req, err, holding))
		return
	}
	ok.Name, ok.Kind, ok.Owner, ok.RequestID, ok.Holding = o.req.Name, o.req.Kind, o.owner, o.req.RequestID, holding
	sendIf(ctx, o.sender, ok)
}

// onTick fails waiters whose deadline passed, makes the head due when the
// holder's lease has run out, and ends local holdings whose explicit lease
// ran out without an unlock.
func (a *keyActor) onTick(ctx actor.Context) {
	now := a.refs.cfg.Clock.Now()
	var ended []string
	for owner, h := range a.holdings {
		// A request of the owner's in flight (a reentry, an unlock of one
		// hold) may have refreshed the lease, or may never reach Redis:
		// the owner is told now either way, and should Redis have
		// refreshed it, the answer gives the holds back (releaseLost).
		if h.expiresAt.IsZero() || now.Before(h.expiresAt) {
			continue
		}
		ended = append(ended, owner)
	}
	slices.Sort(ended)
	for _, owner := range ended {
		h := a.holdings[owner]
		if (h.uncertain || a.io().sharesHash()) && !a.inFlightFor(owner, h.id) {
			// A failed request may have left the lease longer than counted.
			// A read/write lock's hash is shared: it may live on (raised by
			// the owner's other side, or kept by other readers) with the
			// owner's field in it, which would keep others out until the
			// hash's TTL. Give the holds back. A request of the holding in
			// flight gives them back itself once its answer shows what
			// Redis kept (a lost-hold release queued now could run after it and
			// release the holds of the holding it may start).
			a.releaseLost(owner, fmt.Sprintf("%s:%d", owner, h.id), h.count, h.lease)
		}
		a.lose(ctx, owner, h, fmt.Errorf("%w: the lease of %s held by %s ran out", messages.ErrLockLost, a.key.Name, owner))
	}
	for _, w := range a.waiters.expire(now) {
		a.replyFailed(ctx, w, messages.ErrTimeout)
		a.leaveQueue(w)
	}
	a.waiters.wakeDue(now, a.io().eachAttempts())
}

// settle re-arms the timer for the next deadline or wake-up, unsubscribes
// when nobody waits, and arms the idle timer when there is nothing to do.
func (a *keyActor) settle(ctx actor.Context) {
	next := a.waiters.next(a.io().eachAttempts())
	for _, h := range a.holdings {
		if !h.expiresAt.IsZero() && (next.IsZero() || h.expiresAt.Before(next)) {
			next = h.expiresAt
		}
	}
	a.timer.set(ctx, a.refs.cfg.Clock, next)
	if len(a.groups) > 0 {
		a.dropIdleGroups()
	}
	a.syncSubscriptions(ctx)
	a.idle.track(ctx, a.refs.idle, a.isIdle(), a.refs.cfg.IdleTimeout)
}

// trim lets go of what an idle key actor keeps for its next requests
// (the spare ops and holding, the maps' and queues' room, the script
// arguments): once idle for a while (trimAfter) a name costs the engine
// little until it is passivated, and its next request makes them anew.
func (a *keyActor) trim() {
	a.spare, a.spares, a.spareHolding, a.ops = nil, 0, nil, nil
	a.holdings, a.renewals.registered, a.subs.subscribed = nil, nil, nil
	a.renewals.release()
	a.waiters.trim()
	a.args = nil // made again by the next start
	if a.refs.cfg.keyActorTrimmed != nil {
		a.refs.cfg.keyActorTrimmed(a)
	}
}

func (a *keyActor) isIdle() bool {
	return len(a.holdings) == 0 && len(a.waiters.list) == 0 && len(a.ops) == 0 && a.inflight == nil &&
		len(a.subs.subscribed) == 0 && len(a.renewals.registered) == 0
}

func (a *keyActor) expired(w *waiter, now time.Time) bool {
	return !w.req.Deadline.IsZero() && !now.Before(w.req.Deadline)
}
