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

// holding is one local owner's current hold of the lock.
type holding struct {
	id    uint64
	count int
	lease time.Duration // 0: watchdog mode
	// expiresAt is when an explicit lease ends unless refreshed, measured
	// from before the Redis call that set it, so never later than Redis's
	// own expiry. Zero in watchdog mode.
	expiresAt time.Time
	// reads, for a read lock, are the owner's read holds, oldest first (a
	// read unlock drops the newest). The holding is renewed (lease 0, no
	// expiresAt) while any of them is in watchdog mode, else it ends with
	// the longest.
	reads []readHold
	// uncertain marks a holding one of whose requests failed without an
	// answer: Redis may or may not have set its lease anew, so expiresAt
	// is the earlier of the two ends, and when it comes, the holds Redis
	// may still keep are given back (a read/write lock's holdings are
	// given back at their end anyway).
	uncertain bool
	// unrenewed marks a watchdog holding whose last hold's unlock failed
	// without an answer: it is not known released, so it lives on, no
	// longer renewed, until the renewer finds its lease run out (then the
	// owner is told it is lost) or a later request of its owner's settles
	// it.
	unrenewed bool
	watchers  []*actor.PID
}

// newHolding returns a new holding with an id of its own: the one that
// ended last here if one was kept, with its slices' room (a lock taken
// and released in a loop then allocates no holding).
func (a *keyActor) newHolding() *holding {
	h := a.spareHolding
	if h == nil {
		return &holding{id: a.cfg.holdings.Add(1)}
	}
	a.spareHolding = nil
	*h = holding{id: a.cfg.holdings.Add(1), reads: h.reads[:0], watchers: h.watchers[:0]}
	return h
}

// keepHolding keeps h, a holding a release ended, for newHolding, with
// no reference to its watchers left.
func (a *keyActor) keepHolding(h *holding) {
	clear(h.watchers)
	a.spareHolding = h
}

// readHold is one read hold of an owner's: its lease (0: watchdog mode)
// and, with an explicit lease, when it ends (counted as leaseEnd does).
type readHold struct {
	lease time.Duration
	end   time.Time
}

// settleReads sets a read holding's lease and end from its read holds: in
// watchdog mode while any hold is (the renewer keeps every hold of the
// owner's alive), else the newest hold's lease, ending with the longest.
func (h *holding) settleReads() {
	h.lease, h.expiresAt = 0, time.Time{}
	for _, r := range h.reads {
		if r.lease == 0 {
			h.lease, h.expiresAt = 0, time.Time{}
			return
		}
		h.lease = r.lease
		if r.end.After(h.expiresAt) {
			h.expiresAt = r.end
		}
	}
}

// watch adds pid to the holding's watchers, once.
func (h *holding) watch(pid *actor.PID) {
	if pid == nil {
		return
	}
	for _, w := range h.watchers {
		if w.Equal(pid) {
			return
		}
	}
	h.watchers = append(h.watchers, pid)
}

// waiter is one pending Acquire, of a key actor or a count actor.
type waiter struct {
	req    *messages.Acquire
	sender *actor.PID
	// try marks a request whose deadline had passed on arrival: exactly one
	// attempt, which may run ahead of the queue.
	try bool
	// ready marks a waiter due for an attempt; a refused waiter is not ready
	// until woken (unlock message, subscription, timer, local release).
	ready bool
	// wakeAt is when a refused head waiter retries anyway: the holder's PTTL.
	wakeAt time.Time
	// inflight marks the waiter whose attempt is the request in flight.
	inflight bool
	// woken records a wake-up (unlock message, subscription, reconnect,
	// local release) that came while the waiter's attempt was in flight:
	// the attempt may have read the lock before it was freed, so a refusal
	// is retried at once instead of sleeping on a stale PTTL.
	woken bool
	// refused marks a waiter refused at least once: it listens on its
	// channel from then on, and a fair waiter has a place in Redis's queue
	// to give up when it leaves.
	refused bool
	// cancelled marks a waiter already answered: because of Cancel, or by
	// its latch's zero message while its read was in flight. The answer
	// of a request in flight for it is then dropped.
	cancelled bool
	// gone marks a waiter that left the queue (for the deadlines heap).
	gone bool
	// permitIDs are the permits a permit-expirable semaphore waiter asks
	// for, one or more.
	permitIDs []string
	// channel is what a refused waiter listens on (set with refused).
	channel string
	// poll is a spin lock waiter's back-off (lockIO.polls).
	poll spinPoll
}

// opKind tells what the one Redis request in flight does.
type opKind uint8

const (
	opAttempt opKind = iota + 1
	opRelease
	opUndo
	opVerify // is the owner's field still there? (after a renewal found it gone)
	opGiveUp // a fair waiter leaves the Redis queue
	opExtend // a holding's lease is set anew (extend.go)
)

// op is a Redis request of the key actor, queued or in flight.
type op struct {
	kind   opKind
	w      *waiter           // opAttempt, opGiveUp
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
	// givingBack marks such a release (giveBack): it belongs to no
	// current holding of its owner's.
	givingBack bool
	// count and holdLease are the owner's holding's count and lease when
	// an opAttempt or opRelease started (what to give back should the
	// holding end meanwhile).
	count     int
	holdLease time.Duration
	// closing marks a give-up or undo run after Close began, within the
	// closing bound.
	closing bool
	// next, on an opRelease of a last hold, is the local waiter the lock is
	// handed to in the same round trip (lockIO.handoff).
	next *waiter
	// even marks the unlock that ends a streak of handoffs: the local
	// waiters then wait for its message like every other process's.
	even bool
	// started is when the request was sent; a lease it sets runs from no
	// earlier than this.
	started time.Time

	// What the call on the workers reads (run): set by start, untouched by
	// the actor until the result comes back.
	a         *keyActor
	rio       lockIO
	callLease time.Duration
	sys       *actor.ActorSystem
	self      *actor.PID
	// done is the result run sends back: an op runs at most once (a retry
	// is a new op) until recycled.
	done opDone
}

// spareOps bounds the finished ops a key actor keeps for its next requests
// (newOp): an uncontended lock+unlock pair then allocates none.
const spareOps = 2

// newOp returns a zeroed op, a finished one if the actor kept any.
func (a *keyActor) newOp() *op {
	if n := len(a.spare); n > 0 {
		o := a.spare[n-1]
		a.spare[n-1] = nil
		a.spare = a.spare[:n-1]
		return o
	}
	return &op{}
}

// recycle keeps o, whose result the actor has handled, for newOp. Nothing
// refers to a finished op: it is neither in flight nor queued, and its
// worker sent its result and let go of it.
func (a *keyActor) recycle(o *op) {
	if len(a.spare) < spareOps {
		*o = op{} // zeroed now: a kept op holds on to no waiter, message or error
		a.spare = append(a.spare, o)
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

// keyActor owns one lock name for this process: who of this process holds
// it and how often, who waits for it, which holdings the renewer keeps
// alive, and the one Redis request in flight.
type keyActor struct {
	waitingActor
	rio     lockIO
	renewer *actor.PID

	holdings   map[string]*holding
	registered map[string]*registration // owners registered with the renewer; the renewer owns each registration (register)
	paused     map[string]bool          // registered owners not renewed, whose lease's end the renewer still follows
	// waitingActor.waiters are FIFO; the head is the one that waits on
	// Redis (each fair waiter waits).
	ops      []*op // releases and undos, served before attempts
	inflight *op
	spare    []*op // finished ops kept for reuse (newOp)
	// spareHolding is the holding a release ended last, kept for reuse
	// (newHolding): nothing refers to an ended holding.
	spareHolding *holding
	// handoffs counts the handoffs since an ordinary attempt acquired
	// (maxHandoffs).
	handoffs int
	subs     map[string]bool // channels subscribed

	// groups, for a group lock, are each owner's values (sorted), from its
	// acquire or release until it holds, waits for and asks nothing; nil
	// for every other kind.
	groups map[string][]string
}

var _ actor.Actor = (*keyActor)(nil)

func keyActorProps(cfg *Config, k key, root, subscriber, renewer *actor.PID) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		a := &keyActor{
			waitingActor: newWaitingActor(cfg, k, root, subscriber),
			rio:          lockIO{cfg: cfg, name: k.Name, kind: k.Kind},
			renewer:      renewer,
			holdings:     map[string]*holding{},
			registered:   map[string]*registration{},
			paused:       map[string]bool{},
			subs:         map[string]bool{},
		}
		if k.Kind == messages.KindGroupLock {
			a.groups = map[string][]string{} // the other kinds' stays nil: nothing to make per key actor
		}
		if usesLockArgs(k.Kind) {
			a.rio.args = cfg.Scripts.LockArgs(k.Name)
		}
		if cfg.keyActorMade != nil {
			cfg.keyActorMade(a)
		}
		return a
	}, actor.WithDispatcher(cfg.Workers), withMailbox)
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
		a.wakeChannel(m.Channel, "")
	case *unlocked:
		a.wakeChannel(m.Channel, m.Payload)
	case *retry:
		if a.rio.eachAttempts() {
			a.wakeAll()
		} else {
			a.waiters.wakeHead()
		}
	case *renewalGone:
		a.onRenewalGone(ctx, m)
	case *crash:
		panic(fmt.Sprintf("warden: key actor %q told to crash", a.key.Name))
	case *renewalExpired:
		if h := a.holdings[m.Owner]; h != nil && h.lease == 0 && a.registered[m.Owner] != nil {
			a.lose(ctx, m.Owner, h, fmt.Errorf("%w: %s held by %s could not be renewed for %v", messages.ErrLockLost,
				a.key.Name, m.Owner, a.cfg.Watchdog))
			a.syncRenewal(ctx, m.Owner)
		}
	case *tick:
		a.tickFor(ctx, m.Gen, a)
	case *idleTick:
		a.idleFor(ctx, m.Gen, a.isIdle())
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
	w := a.waiters.push(m, ctx.Sender(), a.cfg.Clock.Now())
	if a.rio.polls() {
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
	if due := a.cfg.Clock.Now().Add(w.req.BackOff.OrDefault().Max); due.Before(head.wakeAt) {
		head.wakeAt = due
	}
}

// groupValues records, for a group lock, the values an owner's request
// names: refused when the owner holds, waits for or releases other values
// of the group meanwhile. No values (a release) keep what is known.
func (a *keyActor) groupValues(owner string, values []string) error {
	if a.key.Kind != messages.KindGroupLock || len(values) == 0 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(values))
	if known, ok := a.groups[owner]; ok && !slices.Equal(known, sorted) {
		return messages.Invalid("values", "%s already holds or waits for other values of group %s", owner, a.key.Name)
	}
	a.groups[owner] = sorted
	return nil
}

// forgetGroups drops the values of owners that hold, wait for and ask
// nothing of a group lock any more.
func (a *keyActor) forgetGroups() {
	for owner := range a.groups {
		if a.holdings[owner] != nil || a.registered[owner] != nil || a.waiters.owners[owner] > 0 ||
			(a.inflight != nil && a.inflight.owner == owner) ||
			slices.ContainsFunc(a.ops, func(o *op) bool { return o.owner == owner }) {
			continue
		}
		delete(a.groups, owner)
	}
}

// rioFor is the key's lockIO for a call of owner's: a group lock's with
// owner's values.
func (a *keyActor) rioFor(owner string) lockIO {
	rio := a.rio
	rio.values = a.groups[owner]
	return rio
}

// held names owner's holding for the renewer.
func (a *keyActor) held(owner string) redisio.Held { return a.rioFor(owner).held(owner) }

func (a *keyActor) onCancel(ctx actor.Context, m *messages.Cancel) {
	if w, left := a.cancel(ctx, m); left {
		a.leave(w)
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
		a.leave(w)
	}
}

func (a *keyActor) onWatch(ctx actor.Context, m *messages.Watch) {
	h := a.holdings[m.Owner]
	reply := &messages.Watched{Name: m.Name, Kind: m.Kind, Owner: m.Owner}
	if h != nil {
		reply.Held, reply.Holding = true, h.id
		h.watch(ctx.Sender())
	}
	sendIf(ctx, ctx.Sender(), reply)
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
		if o.kind == opExtend && a.refuseExtend(ctx, o) {
			continue // answered without Redis
		}
		if o.kind == opRelease && !o.givingBack {
			o.next, o.even = a.handoffTo(o)
		}
		a.start(ctx, o)
		return
	}
	// Past the head only a try, a reentry, a fair waiter or a reader may
	// attempt; without any, a long queue is not scanned.
	scan := a.rio.eachAttempts() || a.rio.shared() || a.waiters.beyondHead(a.holdings)
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
			w.refused, w.channel = true, a.rio.channel(w.req.Owner)
			w.wakeAt = a.cfg.Clock.Now().Add(a.sleep(w, -1))
			continue
		}
		if i == 0 || w.try || a.holdings[w.req.Owner] != nil || a.rio.eachAttempts() || a.rio.shared() {
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
	a.inflight = o
	o.started = a.cfg.Clock.Now()
	lease := a.cfg.Watchdog
	h := a.holdings[o.owner]
	if o.givingBack {
		h = nil // it belongs to no current holding: leave that one's lease and renewal alone
	}
	if h != nil && (o.kind == opAttempt || o.kind == opRelease || o.kind == opExtend) {
		o.holding, o.count, o.holdLease = h.id, h.count, h.lease
	}
	switch o.kind {
	case opAttempt:
		o.w.inflight = true
		if o.w.req.Lease > 0 {
			lease = o.w.req.Lease
		}
		// A non-reentrant lock's holder is refused (ErrAlreadyHeld), its
		// holding left as it is: its lease is not touched, nor renewed
		// meanwhile by this attempt's mode.
		refusedEntry := h != nil && a.rio.nonReentrant()
		if h != nil && !refusedEntry && (o.w.req.Lease > 0 || !h.expiresAt.IsZero()) {
			// Until its answer comes the reentry may have set the lease
			// (even a watchdog holding's, to the reentry's explicit one).
			h.expiresAt = a.rio.endInFlight(h.expiresAt, false, lease, o.started, h.reads)
		}
		if o.w.req.Lease == 0 && !refusedEntry {
			// Register before the round trip: a holding must never be
			// unrenewed between its acquire and its registration.
			a.register(ctx, o.owner)
		}
	case opRelease:
		if o.lease > 0 {
			lease = o.lease
		}
		if h != nil {
			if h.lease > 0 {
				lease = h.lease
			}
			if h.count > 1 {
				// Until its answer comes the unlock may have set the lease.
				h.expiresAt = a.rio.endInFlight(h.expiresAt, true, lease, o.started, h.reads)
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
	case opExtend:
		lease = o.ext.Lease
		a.extendInFlight(h, lease, o.started)
	}
	// Closing: a fair waiter's place or an uncertain acquire left behind
	// would hold the lock's other waiters up, so its clean-up still runs,
	// within the bound the closing give-ups have.
	o.closing = (o.kind == opGiveUp || o.kind == opUndo) && a.cfg.IO.Err() != nil
	// The call (run) reads only immutable config and o, which the actor
	// does not touch until the result comes back.
	o.a, o.rio, o.callLease, o.sys, o.self = a, a.rioFor(o.owner), lease, ctx.ActorSystem(), ctx.Self()
	a.calls.Add(1)
	a.cfg.Workers.run(o)
}

// run makes o's Redis call on one of the engine's workers and sends the
// result to the key actor as an opDone.
func (o *op) run() {
	a := o.a
	// o is not read once the result is sent: the actor may recycle it.
	defer a.calls.Done()
	cfg, rio, lease := a.cfg, o.rio, o.callLease
	c, cancel := cfg.ioContext()
	if o.closing {
		cancel()
		c, cancel = cfg.detachedContext(closingUndoTimeout)
	}
	defer cancel()
	d := &o.done
	*d = opDone{op: o}
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
	case opGiveUp:
		d.err = rio.giveUp(c, o.w)
	case opExtend:
		d.held, d.err = rio.extend(c, o.owner, lease)
	}
	o.sys.Root.Send(o.self, d)
}

func (a *keyActor) onOpDone(ctx actor.Context, d *opDone) {
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
		if a.retryClosing(d) {
			break
		}
		if d.err != nil {
			a.cfg.Logger.Warn("warden: undo of an uncertain acquire failed; the lock expires within its lease",
				slog.String("name", a.key.Name), slog.String("owner", d.op.owner), slog.Any("err", d.err))
		}
		a.syncRenewal(ctx, d.op.owner)
	case opVerify:
		a.onVerifyDone(ctx, d)
	case opExtend:
		a.onExtendDone(ctx, d)
	case opGiveUp:
		if a.retryClosing(d) {
			break
		}
		if d.err != nil {
			a.cfg.Logger.Warn("warden: a fair waiter could not leave the queue; its place expires at its deadline",
				slog.String("name", a.key.Name), slog.String("owner", d.op.owner), slog.Any("err", d.err))
		}
	}
}

// heldHereByOther tells that another owner of this process holds an
// exclusive lock that w (not a try, not a reentry) waits for. A fair
// waiter still makes its first attempt: it takes its place in Redis's
// queue then.
func (a *keyActor) heldHereByOther(w *waiter) bool {
	if w.try || !a.rio.handsOff() || a.rio.perWaiter() || a.holdings[w.req.Owner] != nil {
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
// It returns nil for a plain unlock, and even for the unlock that ends a
// streak of maxHandoffs: its local waiters are not woken at once but by
// the unlock's message, on the same footing as other processes' waiters.
func (a *keyActor) handoffTo(o *op) (next *waiter, even bool) {
	h := a.holdings[o.owner]
	if h == nil || h.count > 1 || !a.rio.handsOff() || len(a.waiters.list) == 0 {
		return nil, false
	}
	w := a.waiters.list[0]
	if w.cancelled || w.try || w.inflight || w.req.Owner == o.owner || a.holdings[w.req.Owner] != nil ||
		a.expired(w, a.cfg.Clock.Now()) {
		return nil, false
	}
	// A fair lock's queue in Redis lets other processes' waiters in, in
	// their turn: its streaks need no end.
	if a.handoffs >= maxHandoffs && !a.rio.perWaiter() {
		a.handoffs = 0
		return nil, w.refused
	}
	return w, false
}

func (a *keyActor) onAttemptDone(ctx actor.Context, d *opDone) {
	w := d.op.w
	w.inflight = false
	owner := w.req.Owner
	switch {
	case d.err != nil:
		// The outcome is unknown: the script may have run and only its reply
		// was lost. Undo it if it was applied; never assume. A fair
		// waiter's attempt may also have taken a place in the queue: give
		// it up.
		a.ops = append(a.ops, &op{kind: opUndo, owner: owner, reqID: w.req.RequestID})
		if h := a.holdings[owner]; h != nil && h.id == d.op.holding && !h.expiresAt.IsZero() && !a.rio.nonReentrant() {
			h.uncertain = true // (a non-reentrant holder's attempt never touches its lease)
		}
		if a.endedInFlight(d.op) {
			// The owner was told its holding was lost while this reentry
			// was in flight; the holds it had may still be in Redis.
			a.giveBack(owner, w.req.RequestID, d.op.count, d.op.holdLease)
		}
		if a.rio.perWaiter() {
			w.refused = true
			a.leave(w)
		}
		a.waiters.remove(w)
		if !w.cancelled {
			a.replyFailed(ctx, w, a.cfg.closedOr(d.err))
		}
	case d.acquire.Acquired && a.endedInFlight(d.op) && d.acquire.HoldCount > 1:
		// A reentry whose holding's lease ran out while it was in flight,
		// and the owner was told: Redis applied it before the lease ended,
		// so the holds the owner was told it lost are still there. Give
		// them all back rather than hand the owner a holding it was told
		// is gone.
		a.giveBack(owner, w.req.RequestID, d.acquire.HoldCount, w.req.Lease)
		a.waiters.remove(w)
		if !w.cancelled {
			a.replyFailed(ctx, w, fmt.Errorf("%w: the lease of %s held by %s ran out while a reentry was in flight",
				messages.ErrLockLost, a.key.Name, owner))
		}
	case d.acquire.Acquired && a.holdings[owner] == nil && w.req.Lease > 0 &&
		!a.cfg.Clock.Now().Before(a.rio.leaseEnd(time.Time{}, w.req.Lease, d.op.started)):
		// A first acquire (or a reentry whose holding ended while it was
		// in flight, which Redis ran as a first acquire) with a lease
		// shorter than its round trip: it ran out before the answer came,
		// and another process may hold the lock by now.
		// The owner is not handed a lock it never held at a moment it
		// could know of; Redis ran the acquire after it was sent, so the
		// hold may still be there: it is given back.
		a.giveBack(owner, w.req.RequestID, d.acquire.HoldCount, w.req.Lease)
		a.waiters.remove(w)
		if !w.cancelled {
			a.replyFailed(ctx, w, fmt.Errorf("%w: the lease of %s (%v) ran out before the acquire's answer came",
				messages.ErrLockLost, a.key.Name, w.req.Lease))
		}
	case d.acquire.AlreadyHeld:
		// A non-reentrant lock its owner holds already: refused at once,
		// nothing changed in Redis.
		a.waiters.remove(w)
		a.leave(w)
		if !w.cancelled {
			a.replyFailed(ctx, w, fmt.Errorf("%w: %s %s, owner %s", messages.ErrAlreadyHeld, a.key.Kind, a.key.Name, owner))
		}
	case d.acquire.Acquired:
		h := a.holdings[owner]
		if h != nil && a.rio.nonReentrant() {
			// A non-reentrant lock is entered only when its owner does not
			// hold it: the holding known here had ended in Redis.
			a.lose(ctx, owner, h, fmt.Errorf("%w: %s held by %s had ended before its next acquire",
				messages.ErrLockLost, a.key.Name, owner))
			h = nil
		}
		if h != nil && h.unrenewed && !a.rio.sharesHash() && d.acquire.HoldCount <= 1 {
			// Redis had none of the holds a failed unlock left in doubt:
			// that holding ended (released or expired) before this
			// acquire, which starts the next one.
			a.lose(ctx, owner, h, fmt.Errorf("%w: %s held by %s ended after its unlock failed",
				messages.ErrLockLost, a.key.Name, owner))
			h = nil
		}
		if h == nil {
			h = a.newHolding()
			a.holdings[owner] = h
		}
		h.count = d.acquire.HoldCount
		h.unrenewed = false // the acquire set the lease anew
		if a.rio.shared() {
			// A read acquire adds a hold and leaves the others as they are,
			// with whatever a failed request may have done to them.
			h.reads = append(h.reads, readHold{lease: w.req.Lease, end: a.rio.leaseEnd(time.Time{}, w.req.Lease, d.op.started)})
			h.reads = h.reads[max(0, len(h.reads)-h.count):]
			h.settleReads()
		} else {
			h.uncertain = false
			h.expiresAt = a.rio.leaseEnd(h.expiresAt, w.req.Lease, d.op.started)
			h.lease = w.req.Lease
		}
		a.waiters.remove(w)
		if a.rio.shared() {
			a.waiters.wakeHead() // a shared hold: the next reader may join at once
		}
		if w.cancelled {
			// The requester gave up while the attempt was in flight.
			a.ops = append(a.ops, &op{kind: opRelease, owner: owner, reqID: w.req.RequestID + ":cancel"})
			break
		}
		if w.req.Watch {
			h.watch(w.sender)
		}
		sendIf(ctx, w.sender, &messages.Acquired{Name: w.req.Name, Kind: w.req.Kind, Owner: owner,
			RequestID: w.req.RequestID, HoldCount: h.count, Holding: h.id, Token: d.acquire.Token})
	default:
		if !w.try && !w.refused {
			w.refused, w.channel = true, a.rio.channel(w.req.Owner)
		}
		switch {
		case w.cancelled:
			a.waiters.remove(w)
			a.leave(w)
		case w.try || a.expired(w, a.cfg.Clock.Now()):
			a.waiters.remove(w)
			a.leave(w)
			a.replyFailed(ctx, w, messages.ErrTimeout)
		case w.woken:
			// Freed while the attempt was in flight: try again now. A
			// handoff's acquire may have been the attempt of a waiter
			// that slept (not ready): it is made due here, or the wake-up
			// is lost and it sleeps until its look again.
			w.woken, w.ready = false, true
		default:
			w.ready = false
			w.wakeAt = a.cfg.Clock.Now().Add(a.sleep(w, d.acquire.PTTL))
		}
	}
	a.syncRenewal(ctx, owner)
}

func (a *keyActor) onReleaseDone(ctx actor.Context, d *opDone) {
	o := d.op
	h := a.holdings[o.owner]
	if o.givingBack {
		// Give-backs run before any later request of their owner's, so
		// the owner has no holding yet; should it have one, that holding's
		// holds in Redis were just counted down: tell it.
		if h != nil && d.err == nil && d.held {
			a.lose(ctx, o.owner, h, fmt.Errorf("%w: a give-back of an ended holding of %s released a hold of %s's next",
				messages.ErrLockLost, a.key.Name, o.owner))
		}
		if d.err == nil && !d.held {
			// Redis has none of the owner's holds left: the owner's other
			// give-backs queued behind this one would find none either.
			a.ops = slices.DeleteFunc(a.ops, func(q *op) bool { return q.givingBack && q.owner == o.owner })
		}
		if d.err == nil && d.held && d.remaining == 0 {
			a.waiters.wakeHead()
		}
		a.respondRelease(ctx, o, nil, d.err, 0)
		a.syncRenewal(ctx, o.owner)
		return
	}
	var id uint64
	if h != nil {
		id = h.id
	}
	switch {
	case d.err != nil:
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
			a.giveBack(o.owner, o.reqID, o.count, o.holdLease)
		}
		a.respondRelease(ctx, o, nil, a.cfg.closedOr(d.err), id)
	case !d.held:
		if h != nil {
			a.lose(ctx, o.owner, h, fmt.Errorf("%w: %s found not held by %s at unlock", messages.ErrLockLost, a.key.Name, o.owner))
		}
		a.respondRelease(ctx, o, nil, fmt.Errorf("%w: %s %s, owner %s", messages.ErrNotHeld, a.key.Kind, a.key.Name, o.owner), id)
	case d.remaining > 0 && a.endedInFlight(o):
		// The holding's lease ran out while this unlock of one of its
		// holds was in flight, and the owner was told; Redis applied the
		// unlock before the lease ended, so the other holds are still
		// there: give them back too.
		a.giveBack(o.owner, o.reqID, d.remaining, o.holdLease)
		a.respondRelease(ctx, o, nil, fmt.Errorf("%w: the lease of %s held by %s ran out while an unlock was in flight",
			messages.ErrLockLost, a.key.Name, o.owner), o.holding)
	default:
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
			if !o.even && o.next == nil {
				a.waiters.wakeHead()
			}
		} else if h != nil {
			h.count = d.remaining
			switch {
			case h.lease > 0 && a.rio.unlockRefreshesLease():
				h.expiresAt = a.rio.leaseEnd(time.Time{}, h.lease, o.started) // the unlock refreshed the lease
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
		a.respondRelease(ctx, o, &messages.Released{Remaining: d.remaining}, nil, id)
	}
	a.syncRenewal(ctx, o.owner)
}

// retryClosing queues again a give-up or undo that Close cut (it began
// before Close and failed with the engine's cancelled calls), to run
// within the closing bound; it tells whether it did.
func (a *keyActor) retryClosing(d *opDone) bool {
	o := d.op
	if d.err == nil || o.closing || a.cfg.IO.Err() == nil {
		return false
	}
	a.ops = append(a.ops, &op{kind: o.kind, w: o.w, owner: o.owner, reqID: o.reqID})
	return true
}

// endedInFlight tells that the holding o's owner had when o started has
// ended meanwhile (its lease ran out and the owner was told).
func (a *keyActor) endedInFlight(o *op) bool {
	if o.holding == 0 {
		return false
	}
	h := a.holdings[o.owner]
	return h == nil || h.id != o.holding
}

// giveBack queues the release of n holds of owner's that Redis still has
// after the engine told the owner they were lost, each with a request ID
// of its own derived from reqID, so that no hold outlives the news. lease
// is what a release that leaves holds refreshes them to (0: the
// watchdog): the holds expire within it should a release fail.
func (a *keyActor) giveBack(owner, reqID string, n int, lease time.Duration) {
	for i := range n {
		a.ops = append(a.ops, &op{kind: opRelease, owner: owner, reqID: fmt.Sprintf("%s:lost%d", reqID, i), lease: lease,
			givingBack: true})
	}
}

// inFlightFor tells that the request in flight is one of owner's that
// started while it had holding id.
func (a *keyActor) inFlightFor(owner string, id uint64) bool {
	o := a.inflight
	return o != nil && o.owner == owner && o.holding == id
}

// sleep is how long a refused waiter w waits for a message before it tries
// again anyway, given the PTTL the refusal reported.
func (a *keyActor) sleep(w *waiter, pttl time.Duration) time.Duration {
	if a.rio.polls() {
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
		wait = min(a.cfg.Watchdog/3, 100*time.Millisecond)
		if pttl == 0 && !a.rio.perWaiter() {
			wait = time.Millisecond
		}
	}
	if a.rio.perWaiter() {
		// A fair waiter's next attempt refreshes its place in the queue
		// (fair_place.go); it also bounds the wait should its wake-up
		// message be lost.
		wait = min(wait, a.cfg.fairLookAgain(w.req))
	}
	return wait
}

// leave gives up a waiter's place in Redis's queue (a fair waiter that was
// refused there) when it leaves without the lock.
func (a *keyActor) leave(w *waiter) {
	if a.rio.perWaiter() && w.refused {
		a.ops = append(a.ops, &op{kind: opGiveUp, w: w, owner: w.req.Owner, reqID: w.req.RequestID})
	}
}

// respondRelease answers a Release with ok, or with a ReleaseFailed
// carrying err. A release nobody waits for (the engine's own, of a
// cancelled acquire, or one sent without a sender) only logs a failure.
func (a *keyActor) respondRelease(ctx actor.Context, o *op, ok *messages.Released, err error, holding uint64) {
	if o.req == nil || o.sender == nil {
		if err != nil && !errors.Is(err, messages.ErrNotHeld) {
			a.cfg.Logger.Warn("warden: release failed with nobody to tell; the lock expires within its lease",
				slog.String("name", a.key.Name), slog.String("owner", o.owner), slog.Any("err", err))
		}
		return
	}
	if err != nil {
		sendIf(ctx, o.sender, releaseFailed(o.req, err, holding))
		return
	}
	ok.Name, ok.Kind, ok.Owner, ok.RequestID, ok.Holding = o.req.Name, o.req.Kind, o.owner, o.reqID, holding
	sendIf(ctx, o.sender, ok)
}

func (a *keyActor) onRenewalGone(ctx actor.Context, m *renewalGone) {
	h := a.holdings[m.Owner]
	if h == nil || h.lease != 0 || a.registered[m.Owner] == nil {
		return // released meanwhile, or not a watchdog holding
	}
	// The renewal may have read Redis before this holding's acquire ran
	// (registration precedes the acquire round trip). Look again, in order
	// with this key's other requests, before telling anyone.
	for _, o := range a.ops {
		if o.kind == opVerify && o.owner == m.Owner {
			return
		}
	}
	a.ops = append(a.ops, &op{kind: opVerify, owner: m.Owner, holding: h.id})
}

func (a *keyActor) onVerifyDone(ctx actor.Context, d *opDone) {
	o := d.op
	h := a.holdings[o.owner]
	switch {
	case h == nil || h.id != o.holding:
		// The holding ended meanwhile.
	case d.err != nil:
		// Unknown: the next renewal tick tells again.
		a.cfg.Logger.Warn("warden: could not verify a lock its renewal found gone",
			slog.String("name", a.key.Name), slog.String("owner", o.owner), slog.Any("err", d.err))
	case !d.held:
		a.lose(ctx, o.owner, h, fmt.Errorf("%w: %s no longer held by %s at renewal", messages.ErrLockLost, a.key.Name, o.owner))
	}
	a.syncRenewal(ctx, o.owner)
}

// lose ends a holding that vanished while held and tells its watchers.
func (a *keyActor) lose(ctx actor.Context, owner string, h *holding, err error) {
	delete(a.holdings, owner)
	for _, pid := range h.watchers {
		ctx.Send(pid, &messages.LockLost{Name: a.key.Name, Kind: a.key.Kind, Owner: owner, Holding: h.id, Err: err})
	}
	a.cfg.Logger.Warn("warden: lock lost", slog.String("name", a.key.Name), slog.String("owner", owner))
}

// onTick fails waiters whose deadline passed, makes the head due when the
// holder's lease has run out, and ends local holdings whose explicit lease
// ran out without an unlock.
func (a *keyActor) onTick(ctx actor.Context) {
	now := a.cfg.Clock.Now()
	var ended []string
	for owner, h := range a.holdings {
		// A request of the owner's in flight (a reentry, an unlock of one
		// hold) may have refreshed the lease, or may never reach Redis:
		// the owner is told now either way, and should Redis have
		// refreshed it, the answer gives the holds back (giveBack).
		if h.expiresAt.IsZero() || now.Before(h.expiresAt) {
			continue
		}
		ended = append(ended, owner)
	}
	slices.Sort(ended)
	for _, owner := range ended {
		h := a.holdings[owner]
		if (h.uncertain || a.rio.sharesHash()) && !a.inFlightFor(owner, h.id) {
			// A failed request may have left the lease longer than counted.
			// A read/write lock's hash is shared: it may live on (raised by
			// the owner's other side, or kept by other readers) with the
			// owner's field in it, which would keep others out until the
			// hash's TTL. Give the holds back. A request of the holding in
			// flight gives them back itself once its answer shows what
			// Redis kept (a give-back queued now could run after it and
			// release the holds of the holding it may start).
			a.giveBack(owner, fmt.Sprintf("%s:%d", owner, h.id), h.count, h.lease)
		}
		a.lose(ctx, owner, h, fmt.Errorf("%w: the lease of %s held by %s ran out", messages.ErrLockLost, a.key.Name, owner))
	}
	for _, w := range a.waiters.expire(now) {
		a.replyFailed(ctx, w, messages.ErrTimeout)
		a.leave(w)
	}
	a.waiters.wakeDue(now, a.rio.eachAttempts())
}

// settle re-arms the timer for the next deadline or wake-up, unsubscribes
// when nobody waits, and arms the idle timer when there is nothing to do.
func (a *keyActor) settle(ctx actor.Context) {
	next := a.waiters.next(a.rio.eachAttempts())
	for _, h := range a.holdings {
		if !h.expiresAt.IsZero() && (next.IsZero() || h.expiresAt.Before(next)) {
			next = h.expiresAt
		}
	}
	a.timer.set(ctx, next)
	if len(a.groups) > 0 {
		a.forgetGroups()
	}
	a.syncSubscriptions(ctx)
	a.idle.track(ctx, a.isIdle(), a.cfg.IdleTimeout)
}

// syncSubscriptions keeps the key actor subscribed to exactly the channels
// its refused waiters listen on: the name's channel, or each fair waiter's
// own.
func (a *keyActor) syncSubscriptions(ctx actor.Context) {
	if len(a.waiters.list) == 0 && len(a.subs) == 0 {
		return // the uncontended path: nothing to compare
	}
	if a.rio.polls() {
		return // a spin lock's waiters poll: they listen on nothing
	}
	want := map[string]bool{}
	for _, w := range a.waiters.list {
		if w.refused && !w.cancelled {
			want[w.channel] = true
			if !a.rio.eachAttempts() {
				break
			}
		}
	}
	// The commands go out in an order that does not depend on map
	// iteration: unsubscriptions sorted, subscriptions in queue order.
	var gone []string
	for ch := range a.subs {
		if !want[ch] {
			gone = append(gone, ch)
		}
	}
	slices.Sort(gone)
	if a.rio.perWaiter() && len(a.waiters.list) > 0 {
		// A fair waiter listens on a channel of its own, and its owner
		// often waits again soon (a handle used in a loop). While others
		// still wait, up to lingerChannels channels nobody listens on stay
		// subscribed: waiting again then costs no SUBSCRIBE, UNSUBSCRIBE
		// or the extra attempt a fresh subscription makes (wakeChannel on
		// subscribed).
		gone = gone[:max(0, len(gone)-lingerChannels)]
	}
	for _, ch := range gone {
		delete(a.subs, ch)
		ctx.Send(a.subscriber, &unsubscribe{Channel: ch, PID: ctx.Self()})
	}
	missing := 0
	for ch := range want {
		if !a.subs[ch] {
			missing++
		}
	}
	for _, w := range a.waiters.list {
		if missing == 0 {
			break
		}
		if ch := w.channel; want[ch] && !a.subs[ch] {
			a.subs[ch] = true
			missing--
			ctx.Send(a.subscriber, &subscribe{Channel: ch, PID: ctx.Self()})
		}
	}
}

// lingerChannels bounds the fair waiters' channels a key actor keeps
// subscribed while nobody listens on them (syncSubscriptions).
const lingerChannels = 32

func (a *keyActor) isIdle() bool {
	return len(a.holdings) == 0 && len(a.waiters.list) == 0 && len(a.ops) == 0 && a.inflight == nil &&
		len(a.subs) == 0 && len(a.registered) == 0
}

func (a *keyActor) expired(w *waiter, now time.Time) bool {
	return !w.req.Deadline.IsZero() && !now.Before(w.req.Deadline)
}

// wakeAll wakes every waiter.
func (a *keyActor) wakeAll() {
	for _, w := range a.waiters.list {
		wake(w)
	}
}

// wakeChannel wakes whom a message (or a confirmed subscription, payload
// "") on channel concerns: a fair waiter listening on it, every waiter
// after a write unlock, or else the head.
func (a *keyActor) wakeChannel(channel, payload string) {
	switch {
	case a.rio.wakesAll(payload):
		a.wakeAll()
	case a.rio.eachAttempts():
		for _, w := range a.waiters.list {
			if w.channel == channel {
				wake(w)
			}
		}
	default:
		a.waiters.wakeHead()
	}
}

func wake(w *waiter) {
	if w.inflight {
		w.woken = true
	} else {
		w.ready = true
	}
}

// syncRenewal makes the renewer's registration of owner match the local
// table: renewed exactly while owner holds in watchdog mode or has a
// watchdog-mode attempt in flight, and registered but paused while its
// watchdog holding is unrenewed (a failed unlock), or a last hold's
// unlock is in flight.
func (a *keyActor) syncRenewal(ctx actor.Context, owner string) {
	h := a.holdings[owner]
	renew := h != nil && h.lease == 0 && !h.unrenewed
	if o := a.inflight; o != nil && o.kind == opAttempt && o.owner == owner && o.w.req.Lease == 0 &&
		(h == nil || !a.rio.nonReentrant()) {
		renew = true
	}
	switch {
	case a.paused[owner] && a.inflight != nil && a.inflight.kind == opRelease && a.inflight.owner == owner:
		// A last hold's unlock in flight: its outcome tells.
	case renew:
		a.register(ctx, owner)
	case h != nil && h.lease == 0 && h.unrenewed:
		a.pause(ctx, owner)
	default:
		a.unregister(ctx, owner)
	}
}

// register has the renewer renew owner's holding. A paused registration
// is registered anew: it resumes after an acquire set the lease again (a
// reentry after a failed unlock), so its lease clock starts now, and an
// expiry the renewer reported while it was paused (the holding that ended
// then) does not hide the next one.
func (a *keyActor) register(ctx actor.Context, owner string) {
	if a.registered[owner] != nil && !a.paused[owner] {
		return
	}
	r := newRegistration(a.held(owner), owner, ctx.Self(), a.cfg.Clock.Now(), a.key.Kind)
	a.registered[owner] = r
	delete(a.paused, owner)
	ctx.Send(a.renewer, (*register)(r))
}

// pause has the renewer stop renewing owner's holding, but still tell when
// its lease has run out (renewalExpired). An owner not registered stays so.
func (a *keyActor) pause(ctx actor.Context, owner string) {
	if r := a.registered[owner]; r != nil && !a.paused[owner] {
		a.paused[owner] = true
		ctx.Send(a.renewer, (*pause)(r))
	}
}

func (a *keyActor) unregister(ctx actor.Context, owner string) {
	if r := a.registered[owner]; r != nil {
		delete(a.registered, owner)
		delete(a.paused, owner)
		ctx.Send(a.renewer, (*unregister)(r))
	}
}

// leaveAll gives up, at once and in order, the Redis queue places of every
// fair waiter (the actor is stopping: a queued give-up would never run).
// The actor's Redis call has finished (stopCalls) before this runs. One
// bound covers every give-up, so a Redis that does not answer holds the
// stop up once, not once per waiter.
func (a *keyActor) leaveAll() {
	if !a.rio.perWaiter() {
		return
	}
	leaving := make([]*waiter, 0, len(a.waiters.list)+len(a.ops))
	for _, w := range a.waiters.list {
		if w.refused || w.inflight {
			leaving = append(leaving, w)
		}
	}
	for _, o := range a.ops {
		if o.kind == opGiveUp {
			leaving = append(leaving, o.w) // left the local queue, not yet Redis's
		}
	}
	if o := a.inflight; o != nil && o.kind == opGiveUp {
		leaving = append(leaving, o.w) // its answer never came back: cut by Close
	}
	if len(leaving) == 0 {
		return
	}
	c, cancel := a.cfg.detachedContext(closingUndoTimeout)
	defer cancel()
	for _, w := range leaving {
		if err := a.rio.giveUp(c, w); err != nil {
			a.cfg.Logger.Warn("warden: a fair waiter could not leave the queue; its place expires at its deadline",
				slog.String("name", a.key.Name), slog.String("owner", w.req.Owner), slog.Any("err", err))
		}
	}
}

// onStopping answers everybody left. On Close that is ErrClosed, and the
// holdings are left to expire (Close releases nothing). Passivation stops
// only idle key actors, and a failed one has abandoned its state already;
// any other stop abandons the state as a failure does.
func (a *keyActor) onStopping(ctx actor.Context) {
	a.stopCalls()
	if a.cfg.IO.Err() != nil {
		a.answerAll(ctx, messages.ErrClosed)
		return
	}
	a.abandon(ctx, fmt.Errorf("warden: the engine stopped the state of %s", a.key.Name))
}

// fail handles a panic in Receive (a bug): the key actor waits for its
// Redis call, undoes an acquire that call may have made, abandons its
// state, and asks root to stop it. Until then it answers every request
// with the fault (receiveFailed), so no caller is left waiting.
func (a *keyActor) fail(ctx actor.Context, r any) {
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
			c, cancel := a.cfg.ioContext()
			if _, err := a.rioFor(owner).undo(c, owner, reqID); err != nil {
				a.cfg.Logger.Warn("warden: could not undo the acquire in flight; it expires within its lease",
					slog.String("name", a.key.Name), slog.Any("err", err))
			}
			cancel()
		}
	}
	a.abandon(ctx, a.fault)
	retireVia(ctx, a.root, a.key, a.renewer, a.subscriber)
}

// receiveFailed answers a request reaching a failed key actor.
func (a *keyActor) receiveFailed(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.Acquire:
		sendIf(ctx, ctx.Sender(), acquireFailed(m, a.fault))
	case *messages.Release:
		sendIf(ctx, ctx.Sender(), releaseFailed(m, a.fault, 0))
	case *messages.Watch:
		sendIf(ctx, ctx.Sender(), watchFailed(m, a.fault))
	case *messages.Extend:
		sendIf(ctx, ctx.Sender(), extendFailed(m, a.fault, 0))
	}
}

// abandon ends the key actor's state: every waiter and queued release is
// answered with why, every holding reported lost, every renewal and the
// subscription stopped, so each lock expires within its lease.
func (a *keyActor) abandon(ctx actor.Context, why error) {
	for _, owner := range sortedKeys(a.holdings) {
		a.lose(ctx, owner, a.holdings[owner], fmt.Errorf("%w: %v", messages.ErrLockLost, why))
	}
	for _, owner := range sortedKeys(a.registered) {
		a.unregister(ctx, owner) // including a watchdog acquire still in flight
	}
	for _, ch := range sortedKeys(a.subs) {
		delete(a.subs, ch)
		ctx.Send(a.subscriber, &unsubscribe{Channel: ch, PID: ctx.Self()})
	}
	a.answerAll(ctx, why)
}

// answerAll answers every waiter and every release queued or in flight
// with err, and forgets them. Fair waiters first give up their places in
// Redis's queue, or the lock's other waiters would wait for them.
func (a *keyActor) answerAll(ctx actor.Context, err error) {
	a.leaveAll()
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
