package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// The key actor's op queue: the Redis requests it queues (keyActor.ops),
// the one in flight (keyActor.inflight), which one goes next (pump), how
// it runs on the workers (start, op.run) and where its result goes
// (onOpDone).

// opKind tells what the one Redis request in flight does.
type opKind uint8

const (
	opAttempt opKind = iota + 1
	opRelease
	opUndo
	opVerify     // is the owner's field still there? (after a renewal found it gone)
	opLeaveQueue // a fair waiter leaves the Redis queue
	opExtend     // a holding's lease is set anew (extend.go)
)

// op is a Redis request of the key actor, queued or in flight.
type op struct {
	kind   opKind
	w      *waiter           // opAttempt, opLeaveQueue
	req    *messages.Release // opRelease (nil for an internal release)
	ext    *messages.Extend  // opExtend
	sender *actor.PID
	owner  string
	reqID  string
	// holding is the holding an opVerify checks, or the owner's holding
	// when an opAttempt or opRelease started (0: none).
	holding uint64
	// lease, on an internal release of a holding already ended here, is
	// the lease its unlock refreshes (0: the watchdog).
	lease time.Duration
	// releasingLost marks such a release (releaseLost): it belongs to no
	// current holding of its owner's.
	releasingLost bool
	// count and holdLease are the owner's holding's count and lease when
	// an opAttempt or opRelease started (what to give back should the
	// holding end meanwhile).
	count     int
	holdLease time.Duration
	// closing marks a queue leave or undo run after Close began, within the
	// closing bound.
	closing bool
	// next, on an opRelease of a last hold, is the local waiter the lock is
	// handed to in the same round trip (lockIO.handoff).
	next *waiter
	// endsStreak marks the unlock that ends a streak of handoffs: the
	// local waiters then wait for its message like every other process's.
	endsStreak bool
	// started is when the request was sent; a lease it sets runs from no
	// earlier than this.
	started time.Time

	// What the call on the workers reads (run): set by start, untouched by
	// the actor until the result comes back.
	a         *keyActor
	lockIO    lockIO
	callLease time.Duration
	sys       *actor.ActorSystem
	self      *actor.PID
	// done is the result run sends back: an op runs at most once (a retry
	// is a new op) until recycled.
	done opDone
	// spareNext links a recycled op to the key actor's next spare one.
	spareNext *op
}

// spareOps bounds the finished ops a key actor keeps for its next requests
// (newOp): an uncontended lock+unlock pair then allocates none.
const spareOps = 2

// newOp returns a zeroed op, a finished one if the actor kept any.
func (a *keyActor) newOp() *op {
	if o := a.spare; o != nil {
		a.spare, o.spareNext = o.spareNext, nil
		a.spares--
		return o
	}
	return &op{}
}

// recycle keeps o, whose result the actor has handled, for newOp. Nothing
// refers to a finished op: it is neither in flight nor queued, and its
// worker sent its result and let go of it.
func (a *keyActor) recycle(o *op) {
	if a.spares < spareOps {
		*o = op{spareNext: a.spare} // zeroed now: a kept op holds on to no waiter, message or error
		a.spare = o
		a.spares++
	}
}

// opDone carries the result of the op in flight back to the key actor.
type opDone struct {
	op        *op
	acquire   redisio.AcquireResult
	remaining int
	held      bool
	err       error
	// handoff is the whole result of a release that handed the lock on.
	handoff redisio.HandoffResult
}

// pump starts the next Redis request if none is in flight: queued releases
// and undos first, then a try-once or reentrant acquire, then the head
// waiter if it is due.
func (a *keyActor) pump(ctx actor.Context) {
	if a.inflight != nil {
		return
	}
	for len(a.ops) > 0 {
		o := a.ops[0]
		// Shift rather than reslice: the queue keeps its capacity, so the
		// next append of a release does not allocate.
		n := copy(a.ops, a.ops[1:])
		a.ops[n] = nil
		a.ops = a.ops[:n]
		if o.kind == opExtend && a.refuseExtend(ctx, o) || o.kind == opRelease && a.refuseLostRelease(ctx, o) {
			continue // answered without Redis
		}
		if o.kind == opRelease && !o.releasingLost {
			o.next, o.endsStreak = a.handoffTo(o)
		}
		a.start(ctx, o)
		return
	}
	// Past the head only a try, a reentry, a fair waiter or a reader may
	// attempt; without any, a long queue is not scanned.
	scan := a.io().eachAttempts() || a.io().shared() || a.waiters.beyondHead(a.holdings)
	for i, w := range a.waiters.list {
		if i > 0 && !scan {
			break
		}
		if w.cancelled || !w.ready {
			continue
		}
		if i == 0 && !w.refused && a.heldHereByOther(w) {
			// Another owner of this process holds the lock: a first
			// attempt would be refused. Wait as a refused waiter does, for
			// the release here (which hands the lock on), the unlock
			// message or the bounded look again; once woken, it attempts
			// (the holding known here may be gone from Redis).
			w.ready = false
			w.refused, w.channel = true, a.io().channel(w.req.Owner)
			w.wakeAt = a.refs.cfg.Clock.Now().Add(a.sleep(w, -1))
			continue
		}
		if i == 0 || w.try || a.holdings[w.req.Owner] != nil || a.io().eachAttempts() || a.io().shared() {
			o := a.newOp()
			o.kind, o.w, o.owner, o.reqID = opAttempt, w, w.req.Owner, w.req.RequestID
			a.start(ctx, o)
			return
		}
	}
}

// start runs o on the engine's workers; the actor waits for it (calls) on
// stop, and the result comes back as opDone.
func (a *keyActor) start(ctx actor.Context, o *op) {
	if a.args == nil && usesLockArgs(a.key.Kind) {
		// Made for the first request, and again after a trim.
		a.args = a.refs.cfg.Scripts.LockArgs(a.key.Name)
	}
	a.inflight = o
	o.started = a.refs.cfg.Clock.Now()
	lease := a.refs.cfg.Watchdog
	h := a.holdings[o.owner]
	if o.releasingLost {
		h = nil // it belongs to no current holding: leave that one's lease and renewal alone
	}
	if h != nil && (o.kind == opAttempt || o.kind == opRelease || o.kind == opExtend) {
		o.holding, o.count, o.holdLease = h.id, h.count, h.lease
	}
	switch o.kind {
	case opAttempt:
		lease = a.startAttempt(ctx, o, h, lease)
	case opRelease:
		lease = a.startRelease(ctx, o, h, lease)
	case opExtend:
		lease = o.ext.Lease
		a.extendInFlight(h, lease, o.started)
	}
	// Closing: a fair waiter's place, an uncertain acquire or a hold
	// nobody keeps left behind would hold the lock's other waiters up, so
	// its clean-up still runs, within the bound the closing queue leaves
	// have.
	o.closing = o.cleanUp() && a.refs.cfg.IO.Err() != nil
	// The call (run) reads only immutable config and o, which the actor
	// does not touch until the result comes back.
	o.a, o.lockIO, o.callLease, o.sys, o.self = a, a.lockIOFor(o.owner), lease, ctx.ActorSystem(), ctx.Self()
	a.calls.Add(1)
	a.dispatch(o)
	if f := a.refs.cfg.opStarted; f != nil {
		f(a, o)
	}
}

// startAttempt readies an attempt o for its round trip, h being its
// owner's holding (nil: none): the holding's end counted as the reentry may
// set it, the owner registered for renewal first in watchdog mode. It
// returns the lease the call sets, lease (the watchdog's) unless the
// request names one.
func (a *keyActor) startAttempt(ctx actor.Context, o *op, h *holding, lease time.Duration) time.Duration {
	o.w.inflight = true
	if o.w.req.Lease > 0 {
		lease = o.w.req.Lease
	}
	// A non-reentrant lock's holder is refused (ErrAlreadyHeld), its
	// holding left as it is: its lease is not touched, nor renewed
	// meanwhile by this attempt's mode.
	refusedEntry := h != nil && a.io().nonReentrant()
	if h != nil && !refusedEntry && (o.w.req.Lease > 0 || !h.expiresAt.IsZero()) {
		// Until its answer comes the reentry may have set the lease
		// (even a watchdog holding's, to the reentry's explicit one).
		h.expiresAt = a.io().endInFlight(h.expiresAt, false, lease, o.started, h.reads)
	}
	if o.w.req.Lease == 0 && !refusedEntry {
		// Register before the round trip: a holding must never be
		// unrenewed between its acquire and its registration.
		a.register(ctx, o.owner)
	}
	return lease
}

// startRelease readies a release o for its round trip, h being the
// holding it releases a hold of (nil: none, or a give-back): the holding's
// end counted as the unlock may set it, a last hold's renewal paused, and
// the waiter a handoff takes the lock for marked in flight. It returns the
// lease the call sets (lease, the watchdog's, by default).
func (a *keyActor) startRelease(ctx actor.Context, o *op, h *holding, lease time.Duration) time.Duration {
	lease = releaseLease(o, h, lease)
	if h != nil {
		if h.count > 1 {
			// Until its answer comes the unlock may have set the lease.
			h.expiresAt = a.io().endInFlight(h.expiresAt, true, lease, o.started, h.reads)
		}
		if h.count <= 1 {
			// Stop renewal before the unlock round trip, so renewal
			// can never outlive the unlock. The renewer still follows
			// the lease's end: should the unlock fail, the holding is
			// not known released, and its owner is told when the
			// lease has run out.
			a.pause(ctx, o.owner)
		}
	}
	if w := o.next; w != nil {
		w.inflight = true
		if w.req.Lease == 0 {
			a.register(ctx, w.req.Owner) // as an attempt does
		}
	}
	return lease
}

// releaseLease is the lease a release o sets on the holds it leaves, h
// being its owner's holding (nil: none): the holding's own, else o's,
// else lease (the watchdog's).
func releaseLease(o *op, h *holding, lease time.Duration) time.Duration {
	switch {
	case h != nil && h.lease > 0:
		return h.lease
	case o.lease > 0:
		return o.lease
	}
	return lease
}

// run makes o's Redis call, on one of the engine's workers or on the
// goroutine its caller waits on (dispatch), and sends the result to the
// key actor as an opDone. A panic in the call (a hook of the user's Redis
// client, say) is settled as a call whose outcome is unknown, as a lost
// reply would be, once the actor has the result, and then goes on: on a
// worker it ends the process; on a caller's goroutine, whose own request
// the call was, it reaches that caller.
func (o *op) run() {
	d := &o.done
	panicked := o.call(d)
	o.send(d)
	if panicked != nil {
		panic(panicked)
	}
}

// call makes o's Redis call and fills d with its result. A panic in it is
// recovered, d then saying the outcome is unknown (for a handoff, of the
// unlock and of the next waiter's acquire both), and returned.
func (o *op) call(d *opDone) (panicked any) {
	a := o.a
	cfg, rio, lease := a.refs.cfg, o.lockIO, o.callLease
	*d = opDone{op: o}
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("warden: the Redis call of %s panicked, its outcome unknown: %v", rio.name, r)
			*d = opDone{op: o, err: err, handoff: redisio.HandoffResult{UnlockErr: err, AcquireErr: err}}
			panicked = r
		}
	}()
	c, cancel := cfg.ioContext()
	if o.closing {
		cancel()
		c, cancel = cfg.detachedContext(closingUndoTimeout)
	}
	defer cancel()
	switch o.kind {
	case opAttempt:
		d.acquire, d.err = rio.acquireSynced(c, o.w, lease)
	case opRelease:
		if o.next != nil {
			d.handoff = rio.handoff(c, o, lease)
			d.remaining, d.held, d.err = d.handoff.Remaining, d.handoff.Held, d.handoff.UnlockErr
			break
		}
		var acks int
		rs := cfg.ReplicaSync
		d.remaining, d.held, acks, d.err = rio.unlock(c, o.owner, o.reqID, lease)
		if d.err == nil && acks < rs.Replicas {
			// An unlock cannot be undone; a failover before it reached a
			// replica brings the lock back until its lease ends.
			cfg.Logger.Warn("warden: unlock not acknowledged by enough replicas",
				slog.String("name", rio.name), slog.Int("acks", acks), slog.Int("replicas", rs.Replicas))
		}
	case opUndo:
		d.held, d.err = rio.undo(c, o.owner, o.reqID)
	case opVerify:
		var n int
		n, d.err = rio.holdCount(c, o.owner)
		d.held = n > 0
	case opLeaveQueue:
		d.err = rio.leaveQueue(c, o.w)
	case opExtend:
		d.held, d.err = rio.extend(c, o.owner, lease)
	}
	return nil
}

// send ends o's call: the actor's wait for its calls (stopCalls) is over,
// and d goes to the actor. The call counts as ended before d is sent: the
// actor's turn on d may run on this goroutine (its mailbox idle), and
// should that turn fail, its wait for the calls must not wait for the
// very call whose result it handles. o is not read once d is sent: the
// actor may recycle it.
func (o *op) send(d *opDone) {
	sys, self, a := o.sys, o.self, o.a
	a.calls.Done()
	sys.Root.Send(self, d)
}

func (a *keyActor) onOpDone(ctx actor.Context, d *opDone) {
	if f := a.refs.cfg.opDoneSeen; f != nil {
		f(a, d)
	}
	a.inflight = nil
	defer a.recycle(d.op)
	switch d.op.kind {
	case opAttempt:
		if d.err == nil && d.acquire.Acquired {
			a.handoffs = 0 // taken by an ordinary attempt: the streak of handoffs ends
		}
		a.onAttemptDone(ctx, d)
	case opRelease:
		a.onReleaseDone(ctx, d)
		if w := d.op.next; w != nil {
			a.handoffs++
			a.onAttemptDone(ctx, &opDone{op: &op{kind: opAttempt, w: w, owner: w.req.Owner, reqID: w.req.RequestID,
				started: d.op.started}, acquire: d.handoff.Acquire, err: d.handoff.AcquireErr})
		}
	case opUndo:
		if a.cleanedUp(d, "warden: undo of an uncertain acquire failed; the lock expires within its lease") {
			a.syncRenewal(ctx, d.op.owner)
		}
	case opVerify:
		a.onVerifyDone(ctx, d)
	case opExtend:
		a.onExtendDone(ctx, d)
	case opLeaveQueue:
		a.cleanedUp(d, "warden: a fair waiter could not leave the queue; its place expires at its deadline")
	}
}

// heldHereByOther tells that another owner of this process holds an
// exclusive lock that w (not a try, not a reentry) waits for. A fair
// waiter still makes its first attempt: it takes its place in Redis's
// queue then.
func (a *keyActor) heldHereByOther(w *waiter) bool {
	if w.try || !a.io().handsOff() || a.io().perWaiter() || a.holdings[w.req.Owner] != nil {
		return false
	}
	for _, h := range a.holdings {
		if h.count > 0 {
			return true
		}
	}
	return false
}

// maxHandoffs bounds how many times in a row a key actor hands its lock
// from one local owner to the next in the unlock's round trip. Each
// handoff's acquire reaches Redis right behind the unlock, ahead of any
// other process's waiter woken by it; after this many, one unlock goes
// alone, so the other processes' waiters get a fair chance.
const maxHandoffs = 8

// handoffTo picks the local waiter an unlock of the last hold can hand the
// lock to in the same round trip: the head waiter, when it is due for an
// attempt or waits on Redis (refused), for a kind and setup that allow it.
// It returns nil for a plain unlock, and endsStreak for the unlock that ends a
// streak of maxHandoffs: its local waiters are not woken at once but by
// the unlock's message, on the same footing as other processes' waiters.
func (a *keyActor) handoffTo(o *op) (next *waiter, endsStreak bool) {
	h := a.holdings[o.owner]
	if h == nil || h.count > 1 || !a.io().handsOff() || len(a.waiters.list) == 0 {
		return nil, false
	}
	w := a.waiters.list[0]
	if w.cancelled || w.try || w.inflight || w.req.Owner == o.owner || a.holdings[w.req.Owner] != nil ||
		a.expired(w, a.refs.cfg.Clock.Now()) {
		return nil, false
	}
	// A fair lock's queue in Redis lets other processes' waiters in, in
	// their turn: its streaks need no end.
	if a.handoffs >= maxHandoffs && !a.io().perWaiter() {
		a.handoffs = 0
		return nil, w.refused
	}
	return w, false
}

// cleanedUp settles a clean-up (an undo, a queue leave): queued again
// should Close have cut it (retryClosing), else a failure logged with
// warning. It tells whether the clean-up is over (not queued again).
func (a *keyActor) cleanedUp(d *opDone, warning string) bool {
	if a.retryClosing(d) {
		return false
	}
	if d.err != nil {
		a.refs.cfg.Logger.Warn(warning, slog.String("name", a.key.Name), slog.String("owner", d.op.owner), slog.Any("err", d.err))
	}
	return true
}

// cleanUp tells a clean-up, which no requester waits on and nobody else
// would make: an undo, a queue leave, an internal release (the give-back
// of an acquire its requester left, or of holds told lost).
func (o *op) cleanUp() bool {
	return o.kind == opUndo || o.kind == opLeaveQueue || o.kind == opRelease && o.req == nil
}

// retryClosing queues again a clean-up that Close cut (it began before
// Close and failed with the engine's cancelled calls), to run within the
// closing bound; it tells whether it did.
func (a *keyActor) retryClosing(d *opDone) bool {
	o := d.op
	if d.err == nil || o.closing || !o.cleanUp() || a.refs.cfg.IO.Err() == nil {
		return false
	}
	a.ops = append(a.ops, &op{kind: o.kind, w: o.w, owner: o.owner, reqID: o.reqID, lease: o.lease,
		releasingLost: o.releasingLost})
	return true
}
