package actors

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// The key actor's renewal bookkeeping: which owners the renewer renews
// (keyRenewals.registered) or only follows to their lease's end
// (keyRenewals.paused), kept in line with the holdings (syncRenewal), and
// what the renewer's reports of a holding gone lead to.

func (a *keyActor) onRenewalGone(ctx actor.Context, m *renewalGone) {
	h := a.holdings[m.Owner]
	if h == nil || h.lease != 0 || a.renewals.registered[m.Owner] == nil {
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

// onRenewalExpired ends a watchdog holding the renewer could not renew for
// a whole watchdog timeout: its lease may have run out in Redis.
func (a *keyActor) onRenewalExpired(ctx actor.Context, m *renewalExpired) {
	if h := a.holdings[m.Owner]; h != nil && h.lease == 0 && a.renewals.registered[m.Owner] != nil {
		a.lose(ctx, m.Owner, h, fmt.Errorf("%w: %s held by %s could not be renewed for %v", messages.ErrLockLost,
			a.key.Name, m.Owner, a.cfg.Watchdog))
		a.syncRenewal(ctx, m.Owner)
	}
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

// syncRenewal makes the renewer's registration of owner match the local
// table: renewed exactly while owner holds in watchdog mode or has a
// watchdog-mode attempt in flight, and registered but paused while its
// watchdog holding is unrenewed (a failed unlock), or a last hold's
// unlock is in flight.
func (a *keyActor) syncRenewal(ctx actor.Context, owner string) {
	h := a.holdings[owner]
	renew := h != nil && h.lease == 0 && !h.unrenewed
	if o := a.inflight; o != nil && o.kind == opAttempt && o.owner == owner && o.w.req.Lease == 0 &&
		(h == nil || !a.io().nonReentrant()) {
		renew = true
	}
	switch {
	case a.renewals.paused[owner] && a.inflight != nil && a.inflight.kind == opRelease && a.inflight.owner == owner:
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
	if a.renewals.renewed(owner) {
		return
	}
	a.renewals.add(ctx, a.refs.renewer, newRegistration(a.held(owner), owner, ctx.Self(), a.cfg.Clock.Now(), a.key.Kind))
}

// pause has the renewer stop renewing owner's holding, but still tell when
// its lease has run out (renewalExpired). An owner not registered stays so.
func (a *keyActor) pause(ctx actor.Context, owner string) {
	a.renewals.pause(ctx, a.refs.renewer, owner)
}

func (a *keyActor) unregister(ctx actor.Context, owner string) {
	a.renewals.unregister(ctx, a.refs.renewer, owner)
}

// keyRenewals is the key actor's renewal bookkeeping: which of its owners
// the renewer renews, and which it only follows to their lease's end.
// What each registration holds is the renewer's (register).
type keyRenewals struct {
	registered map[string]*registration // owners registered with the renewer
	paused     map[string]bool          // registered owners not renewed, whose lease's end the renewer still follows
}

// renewed tells that owner is registered and not paused.
func (r *keyRenewals) renewed(owner string) bool {
	return r.registered[owner] != nil && !r.paused[owner]
}

// add registers reg, its owner's registration anew should it have been
// paused, telling renewer.
func (r *keyRenewals) add(ctx actor.Context, renewer *actor.PID, reg *registration) {
	if r.registered == nil {
		r.registered = map[string]*registration{}
	}
	r.registered[reg.owner] = reg
	delete(r.paused, reg.owner)
	ctx.Send(renewer, (*register)(reg))
}

// pause has the renewer stop renewing owner, still following its lease's
// end, telling renewer. An owner not registered stays so.
func (r *keyRenewals) pause(ctx actor.Context, renewer *actor.PID, owner string) {
	if reg := r.registered[owner]; reg != nil && !r.paused[owner] {
		if r.paused == nil {
			r.paused = map[string]bool{}
		}
		r.paused[owner] = true
		ctx.Send(renewer, (*pause)(reg))
	}
}

// unregister has renewer forget owner.
func (r *keyRenewals) unregister(ctx actor.Context, renewer *actor.PID, owner string) {
	if reg := r.registered[owner]; reg != nil {
		delete(r.registered, owner)
		delete(r.paused, owner)
		ctx.Send(renewer, (*unregister)(reg))
	}
}
