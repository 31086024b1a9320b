package actors

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// lostLease is what a release of holds their owner was told are lost
// refreshes the holds it leaves to (rather than the watchdog timeout, as
// a release of no current holding would): should the next release of
// them fail, Redis lets them go within it. One whose holds expired first
// finds none, which ends it as well.
const lostLease = time.Second

// givingBackLease is the lease of a give-back of holds kept by lease (0:
// the watchdog), never longer than lostLease.
func givingBackLease(lease time.Duration) time.Duration {
	if lease <= 0 || lease > lostLease {
		return lostLease
	}
	return lease
}

// refuseLostRelease answers o, a release of a holding its owner was told
// is lost (messages.Release.LostHolding), with ErrNotHeld when the owner
// has a newer holding by now: the holds Redis kept are that holding's,
// and its own requests release them. It tells whether it did. Otherwise
// the release runs, refreshing the holds it leaves to lostLease, and
// releaseLostAgain releases the rest.
func (a *keyActor) refuseLostRelease(ctx actor.Context, o *op) bool {
	if o.req == nil || o.req.LostHolding == 0 {
		return false
	}
	h := a.holdings[o.owner]
	if h == nil {
		o.lease = lostLease
		return false
	}
	if h.id == o.req.LostHolding {
		return false // not ended here after all: an ordinary release
	}
	a.respondRelease(ctx, o, nil, fmt.Errorf("%w: %s %s, owner %s: the holding reported lost was followed by another",
		messages.ErrNotHeld, a.key.Kind, a.key.Name, o.owner), h.id)
	a.recycle(o)
	return true
}

// releaseLostAgain follows o, a release of a lost holding (no current
// holding here) that left holds, with the next, ahead of every other
// request: the requester is answered by the one that leaves none (or
// fails), so when its Unlock returns Redis has nothing left of the
// holding. Each has a request ID of its own (the holds left make it
// unique). It tells whether it did.
func (a *keyActor) releaseLostAgain(o *op, h *holding, remaining int) bool {
	if o.req == nil || o.req.LostHolding == 0 || h != nil || remaining <= 0 {
		return false
	}
	n := a.newOp()
	n.kind, n.req, n.sender, n.owner = opRelease, o.req, o.sender, o.owner
	n.reqID = fmt.Sprintf("%s:lost%d", o.req.RequestID, remaining)
	a.ops = slices.Insert(a.ops, 0, n)
	return true
}
