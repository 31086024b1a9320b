package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// The key actor's holdings: who of this process holds the lock, how often,
// with which lease and until when (keyActor.holdings), who watches each
// holding, how a holding ends (lose) and how the holds Redis may still
// keep of an ended one are given back (releaseLost).

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
		return &holding{id: a.refs.cfg.holdings.Add(1)}
	}
	a.spareHolding = nil
	*h = holding{id: a.refs.cfg.holdings.Add(1), reads: h.reads[:0], watchers: h.watchers[:0]}
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

func (a *keyActor) onWatch(ctx actor.Context, m *messages.Watch) {
	h := a.holdings[m.Owner]
	reply := &messages.Watched{Name: m.Name, Kind: m.Kind, Owner: m.Owner}
	if h != nil {
		reply.Held, reply.Holding = true, h.id
		h.watch(ctx.Sender())
	}
	sendIf(ctx, ctx.Sender(), reply)
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

// releaseLost queues the release of n holds of owner's that Redis still has
// after the engine told the owner they were lost, each with a request ID
// of its own derived from reqID, so that no hold outlives the news. lease
// is what a release that leaves holds refreshes them to (0: the
// watchdog), never longer than lostLease: the holds expire within it
// should a release fail.
func (a *keyActor) releaseLost(owner, reqID string, n int, lease time.Duration) {
	lease = givingBackLease(lease)
	for i := range n {
		a.ops = append(a.ops, &op{kind: opRelease, owner: owner, reqID: fmt.Sprintf("%s:lost%d", reqID, i), lease: lease,
			releasingLost: true})
	}
}

// inFlightFor tells that the request in flight is one of owner's that
// started while it had holding id.
func (a *keyActor) inFlightFor(owner string, id uint64) bool {
	o := a.inflight
	return o != nil && o.owner == owner && o.holding == id
}

// lose ends a holding that vanished while held and tells its watchers.
func (a *keyActor) lose(ctx actor.Context, owner string, h *holding, err error) {
	delete(a.holdings, owner)
	for _, pid := range h.watchers {
		ctx.Send(pid, &messages.LockLost{Name: a.key.Name, Kind: a.key.Kind, Owner: owner, Holding: h.id, Err: err})
	}
	a.refs.cfg.Logger.Warn("warden: lock lost", slog.String("name", a.key.Name), slog.String("owner", owner))
}

// holdAcquired records what an acquire of owner's took in Redis: a new
// holding, or one more hold of the owner's holding. A holding known here
// that had ended in Redis meanwhile is lost first.
func (a *keyActor) holdAcquired(ctx actor.Context, d *opDone) *holding {
	w := d.op.w
	owner := w.req.Owner
	h := a.holdings[owner]
	if h != nil && a.io().nonReentrant() {
		// A non-reentrant lock is entered only when its owner does not
		// hold it: the holding known here had ended in Redis.
		a.lose(ctx, owner, h, fmt.Errorf("%w: %s held by %s had ended before its next acquire",
			messages.ErrLockLost, a.key.Name, owner))
		h = nil
	}
	if h != nil && h.count > 0 && d.acquire.HoldCount == 1 && !a.io().shared() {
		// A reentry that Redis ran as a first acquire: the owner's holds
		// were gone from Redis (expired, force-unlocked, the key deleted;
		// for a group lock, one of its values) before it, and nothing
		// here had told the owner. That holding is lost; the acquire
		// starts the next one, as a renewal that finds the holds gone
		// would end it first. (A read lock's holds each keep a lease of
		// their own, and its count is theirs: not told so.)
		a.lose(ctx, owner, h, fmt.Errorf("%w: %s held by %s was gone from Redis at its reentry",
			messages.ErrLockLost, a.key.Name, owner))
		h = nil
	}
	if h != nil && h.unrenewed && !a.io().sharesHash() && d.acquire.HoldCount <= 1 {
		// Redis had none of the holds a failed unlock left in doubt:
		// that holding ended (released or expired) before this
		// acquire, which starts the next one.
		a.lose(ctx, owner, h, fmt.Errorf("%w: %s held by %s ended after its unlock failed",
			messages.ErrLockLost, a.key.Name, owner))
		h = nil
	}
	if h == nil {
		h = a.newHolding()
		if a.holdings == nil {
			a.holdings = map[string]*holding{} // made anew after a trim
		}
		a.holdings[owner] = h
	}
	h.count = d.acquire.HoldCount
	h.unrenewed = false // the acquire set the lease anew
	if a.io().shared() {
		// A read acquire adds a hold and leaves the others as they are,
		// with whatever a failed request may have done to them.
		h.reads = append(h.reads, readHold{lease: w.req.Lease, end: a.io().leaseEnd(time.Time{}, w.req.Lease, d.op.started)})
		h.reads = h.reads[max(0, len(h.reads)-h.count):]
		h.settleReads()
	} else {
		h.uncertain = false
		h.expiresAt = a.io().leaseEnd(h.expiresAt, w.req.Lease, d.op.started)
		h.lease = w.req.Lease
	}
	return h
}
