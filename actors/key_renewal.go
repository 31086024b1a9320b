package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
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
			a.key.Name, m.Owner, a.refs.cfg.Watchdog))
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
		a.refs.cfg.Logger.Warn("warden: could not verify a lock its renewal found gone",
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
	case a.renewals.paused(owner) && a.inflight != nil && a.inflight.kind == opRelease && a.inflight.owner == owner:
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
	reg := a.renewals.newRegistration(a.held(owner), owner, ctx.Self(), a.refs.cfg.Clock.Now(), a.key.Kind)
	if a.renewals.registered[owner] != nil && !a.renewals.pending(owner) {
		// The renewer follows a paused registration of this holding: the new
		// one must replace it at once, or the old one's expiry would be
		// taken for the new holding's. A paused one still pending is
		// replaced where it waits (defer_).
		a.renewals.add(ctx, a.refs.renewer, reg)
		return
	}
	a.renewals.defer_(reg, a.dueTimer(ctx), registerDelay(a.refs.cfg.Watchdog))
}

// registerDelay is how long a new watchdog-mode holding waits before the
// renewer hears of it: a lock taken and released within it (most are)
// costs the renewer no message at all. The first renewal then lands a
// renewal period (Watchdog/3) after the acquire when the renewer had
// nothing to renew (it arms its tick from renewedAt), and within
// Watchdog/12 + Watchdog/3 of it when its tick already runs: well inside
// the lease it extends. The expiry the renewer follows counts from the
// registration (renewedAt), not from when the renewer heard of it.
func registerDelay(watchdog time.Duration) time.Duration { return watchdog / 12 }

// dueTimer is the clock timer that tells the key actor its pending
// registrations are due (registrationsDue), made once and re-armed for
// each: a lock taken and released costs it a Reset and a Stop, no
// allocation.
func (a *keyActor) dueTimer(ctx actor.Context) *dueTimer {
	due := &a.renewals.extra().due
	if due.t == nil {
		sys, self := ctx.ActorSystem(), ctx.Self()
		due.t = a.refs.cfg.Clock.AfterFunc(time.Hour, func() { sys.Root.Send(self, &registrationsDue{}) })
		due.t.Stop()
	}
	return due
}

// onRegistrationsDue hands the renewer every pending registration whose
// delay has passed, a paused one as paused (its unlock in flight or
// failed: the renewer follows its lease's end without renewing it), and
// re-arms the timer for the rest. A tick that comes early or stale (the
// timer re-armed meanwhile) only finds less to send.
func (a *keyActor) onRegistrationsDue(ctx actor.Context) {
	r := a.renewals.more
	if r == nil {
		return // a stale tick: nothing pending since the trim
	}
	now := a.refs.cfg.Clock.Now()
	var next time.Time
	for _, owner := range sortedKeys(r.pending) {
		reg := r.pending[owner]
		if at := reg.renewedAt.Add(registerDelay(a.refs.cfg.Watchdog)); at.After(now) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		delete(r.pending, owner)
		reg.paused = r.paused[owner]
		ctx.Send(a.refs.renewer, (*register)(reg))
	}
	r.due.armed = false
	if !next.IsZero() {
		r.due.arm(next.Sub(now))
	}
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
// What each registration holds is the renewer's (register). What a
// holding needs only at times (a pause, a delay) is kept apart (more),
// made on first use and dropped by trim, so that a live key actor is no
// bigger for it.
type keyRenewals struct {
	registered map[string]*registration // owners registered with the renewer, or pending
	more       *renewalsMore
}

// renewalsMore is the part of keyRenewals most key actors use only
// briefly.
type renewalsMore struct {
	paused map[string]bool // registered owners not renewed, whose lease's end the renewer still follows
	// pending are the registrations the renewer has not heard of yet
	// (register, registerDelay): a pending one that is unregistered before
	// its delay passes costs the renewer nothing.
	pending map[string]*registration
	due     dueTimer
	// spare is a pending registration unregistered before the renewer
	// heard of it, kept for the next one: the key actor's alone.
	spare *registration
}

// extra returns r.more, made if need be.
func (r *keyRenewals) extra() *renewalsMore {
	if r.more == nil {
		r.more = &renewalsMore{}
	}
	return r.more
}

// paused tells that owner's registration is paused.
func (r *keyRenewals) paused(owner string) bool { return r.more != nil && r.more.paused[owner] }

// renewed tells that owner is registered and not paused.
func (r *keyRenewals) renewed(owner string) bool {
	return r.registered[owner] != nil && !r.paused(owner)
}

// pending tells that owner's registration waits for its delay, the
// renewer not told of it yet.
func (r *keyRenewals) pending(owner string) bool {
	return r.more != nil && r.more.pending[owner] != nil
}

// newRegistration is owner's registration (newRegistration), made in the
// spare one if there is one.
func (r *keyRenewals) newRegistration(held redisio.Held, owner string, pid *actor.PID, at time.Time, kind messages.Kind) *registration {
	if m := r.more; m != nil && m.spare != nil {
		reg := m.spare
		m.spare = nil
		reg.reset(held, owner, pid, at, kind)
		return reg
	}
	return newRegistration(held, owner, pid, at, kind)
}

// dueTimer is a key actor's timer for its pending registrations.
type dueTimer struct {
	t     clockwork.Timer
	armed bool
}

// arm has the timer fire in d, unless it is armed already (for an earlier
// registration: the tick re-arms it for the later ones).
func (d *dueTimer) arm(in time.Duration) {
	if !d.armed {
		d.armed = true
		d.t.Reset(in)
	}
}

// stop disarms the timer; it stays made for the next arm.
func (d *dueTimer) stop() {
	if d.armed {
		d.armed = false
		d.t.Stop()
	}
}

// release stops the pending registrations' timer and lets go of what
// renewalsMore keeps (trim, or the key actor stopping).
func (r *keyRenewals) release() {
	if m := r.more; m != nil {
		if m.due.t != nil {
			m.due.t.Stop()
		}
		r.more = nil
	}
}

// defer_ registers reg without telling the renewer yet: the key actor
// hands it over once delay has passed (onRegistrationsDue), unless it is
// unregistered first. It replaces a pending registration of the same
// owner (paused: its unlock failed), which the renewer never heard of.
func (r *keyRenewals) defer_(reg *registration, due *dueTimer, delay time.Duration) {
	if r.registered == nil {
		r.registered = map[string]*registration{}
	}
	m := r.extra()
	if m.pending == nil {
		m.pending = map[string]*registration{}
	}
	r.registered[reg.owner] = reg
	m.pending[reg.owner] = reg
	delete(m.paused, reg.owner)
	due.arm(delay)
}

// add registers reg, its owner's registration anew should it have been
// paused, telling renewer.
func (r *keyRenewals) add(ctx actor.Context, renewer *actor.PID, reg *registration) {
	if r.registered == nil {
		r.registered = map[string]*registration{}
	}
	r.registered[reg.owner] = reg
	if r.more != nil {
		delete(r.more.paused, reg.owner)
	}
	ctx.Send(renewer, (*register)(reg))
}

// pause has the renewer stop renewing owner, still following its lease's
// end, telling renewer (a pending registration is handed over paused
// when its delay has passed). An owner not registered stays so.
func (r *keyRenewals) pause(ctx actor.Context, renewer *actor.PID, owner string) {
	if reg := r.registered[owner]; reg != nil && !r.paused(owner) {
		m := r.extra()
		if m.paused == nil {
			m.paused = map[string]bool{}
		}
		m.paused[owner] = true
		if m.pending[owner] == nil {
			ctx.Send(renewer, (*pause)(reg))
		}
	}
}

// unregister has renewer forget owner; a pending registration is dropped
// without a word, and kept for reuse.
func (r *keyRenewals) unregister(ctx actor.Context, renewer *actor.PID, owner string) {
	reg := r.registered[owner]
	if reg == nil {
		return
	}
	delete(r.registered, owner)
	if m := r.more; m != nil {
		delete(m.paused, owner)
		if m.pending[owner] != nil {
			delete(m.pending, owner)
			m.spare = reg
			if len(m.pending) == 0 {
				m.due.stop()
			}
			return
		}
	}
	ctx.Send(renewer, (*unregister)(reg))
}
