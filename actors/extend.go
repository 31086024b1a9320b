package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// The key actor's handling of messages.Extend: a holding's explicit lease
// set anew, run as an op in order with the key's other Redis requests.
// The engine counts the holding's end from the new lease, so its LockLost
// comes when Redis lets the lock go, not at the old lease's end.

// refuseExtend answers an Extend that needs no Redis call: the owner holds
// nothing here (ErrNotHeld), or its holding is in watchdog mode, whose
// lease the renewer keeps (ErrInvalidArgument). It reports whether it
// answered.
func (a *keyActor) refuseExtend(ctx actor.Context, o *op) bool {
	h := a.holdings[o.owner]
	switch {
	case h == nil:
		a.respondExtend(ctx, o, fmt.Errorf("%w: %s %s, owner %s", messages.ErrNotHeld, a.key.Kind, a.key.Name, o.owner))
	case h.lease == 0:
		o.holding = h.id
		a.respondExtend(ctx, o, messages.Invalid("lease", "%s %s is held by %s in watchdog mode: the watchdog "+
			"renews its lease, which has no end to extend", a.key.Kind, a.key.Name, o.owner))
	default:
		return false
	}
	return true
}

// extendInFlight counts h's end, while an extend to lease sent at started
// has not answered, as the earlier of its end before and the new one:
// Redis may or may not have run it yet.
func (a *keyActor) extendInFlight(h *holding, lease time.Duration, started time.Time) {
	end := started.Add(lease - ttlGrain)
	if len(h.reads) > 0 {
		for i := range h.reads {
			h.reads[i].end = minTime(h.reads[i].end, end)
		}
		h.settleReads()
		return
	}
	h.expiresAt = minTime(h.expiresAt, end)
}

func (a *keyActor) onExtendDone(ctx actor.Context, d *opDone) {
	o := d.op
	h := a.holdings[o.owner]
	current := h != nil && h.id == o.holding
	switch {
	case d.err != nil:
		// Unknown outcome: the lease is the old one or the new one. The
		// earlier end counts (extendInFlight), and then the holds Redis
		// may still keep are given back (onTick, for an uncertain
		// holding).
		if current {
			h.uncertain = true
		}
		if a.endedInFlight(o) {
			// The owner was told its holding was lost while the extend was
			// in flight; Redis may have run it first.
			a.releaseLost(o.owner, o.reqID, o.count, o.holdLease)
		}
		a.respondExtend(ctx, o, a.refs.cfg.closedOr(d.err))
	case !d.held:
		if current {
			a.lose(ctx, o.owner, h, fmt.Errorf("%w: %s found not held by %s at extend", messages.ErrLockLost, a.key.Name, o.owner))
		}
		a.respondExtend(ctx, o, fmt.Errorf("%w: %s %s, owner %s", messages.ErrNotHeld, a.key.Kind, a.key.Name, o.owner))
	case !current:
		// The holding's lease ran out while the extend was on its way, and
		// its owner was told; Redis ran the extend before the lease ended,
		// so the holds are there again with the new lease: give them back.
		a.releaseLost(o.owner, o.reqID, o.count, o.holdLease)
		a.respondExtend(ctx, o, fmt.Errorf("%w: the lease of %s held by %s ran out while an extend was in flight",
			messages.ErrLockLost, a.key.Name, o.owner))
	default:
		end := o.started.Add(o.ext.Lease - ttlGrain)
		h.lease, h.uncertain = o.ext.Lease, false
		if len(h.reads) > 0 {
			for i := range h.reads {
				h.reads[i] = readHold{lease: o.ext.Lease, end: end}
			}
			h.settleReads()
		} else {
			h.expiresAt = end
		}
		sendIf(ctx, o.sender, &messages.Extended{Name: o.ext.Name, Kind: o.ext.Kind, Owner: o.owner, RequestID: o.reqID,
			Holding: h.id})
	}
}

// respondExtend answers an Extend with ExtendFailed carrying err, for the
// holding o was for (o.holding).
func (a *keyActor) respondExtend(ctx actor.Context, o *op, err error) {
	sendIf(ctx, o.sender, extendFailed(o.ext, err, o.holding))
}
