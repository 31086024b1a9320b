package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// target is one lock (or semaphore, or latch) the workload uses.
type target struct {
	name string
	kind messages.Kind
	// counts are a latch's counts, one per phase of the run.
	counts []int64
}

// latch names the latch of the given phase.
func (t target) latch(phase int) string {
	return fmt.Sprintf("%s-p%d", t.name, phase)
}

// recorder is the run's history as the workload sees it.
type recorder struct {
	w      *world
	ops    []Op
	holds  []Hold
	multis []MultiOp
}

func (r *recorder) op(o Op) int {
	o.Call = r.w.now
	o.Return = -1
	r.ops = append(r.ops, o)
	r.w.tr.add(r.w.now, "c%d %s %s %s %s", o.Client, o.Owner, o.Action, o.Kind, o.Name)
	return len(r.ops) - 1
}

func (r *recorder) answer(i int, ok, failed bool, token int64) {
	o := &r.ops[i]
	o.Return, o.OK, o.Err, o.Token = r.w.now, ok, failed, token
	r.w.tr.add(r.w.now, "c%d %s %s %s ok=%t err=%t token=%d", o.Client, o.Owner, o.Action, o.Name, ok, failed, token)
}

// owner is one simulated worker: it takes a lock, holds it a while (now
// and then taking it again, reentrantly: a non-reentrant lock refuses
// that with ErrAlreadyHeld), releases it, thinks, and again.
// A read lock's reentry may switch lease mode (watchdog or explicit); an
// owner holding a write lock may downgrade it: take the read side too,
// release the write holds and hold the read on. On a permit-expirable
// semaphore it takes a permit with a lease (now and then holding it past
// the lease) and releases it by its ID; on a latch it counts down, or
// awaits the latch's zero. An owner may take MultiLocks instead, one set
// after the other (see multilock.go).
type owner struct {
	i    int // its index in workload.owners
	cl   *client
	id   string
	seq  int
	busy bool
	// side is the target the owner acts on and what it holds of it.
	side
	// permitID is the permit the owner holds on a permit-expirable
	// semaphore.
	permitID string
	pending  int // index of the op awaiting an answer
	// kept is the other side of a read/write lock the owner is
	// downgrading: the write lock while it takes and holds the read side,
	// then the read lock while it releases the write holds. nil otherwise.
	kept *side
	// multi is the state of an owner that takes MultiLocks (see
	// multilock.go), nil for one that acts on one primitive at a time.
	multi *multiOwner
	// values are the values of the group lock the owner acts on (a Hold
	// each, from hold on).
	values []string
}

// side is what an owner holds of one target; a downgrade keeps one side
// aside while the owner acts on the other.
type side struct {
	tgt target
	// hold is the index of the owner's Hold on tgt in the history (-1 when
	// it believes it holds none).
	hold  int
	lease time.Duration
	// releases is how many releases are still to be sent: one per hold
	// granted, the holds the owner believes it has but for one whose
	// release is in flight.
	releases int
	// mixed marks a read lock the owner took in both lease modes: it holds
	// on a while between its releases.
	mixed bool
}

// swap makes o act on the side it kept, keeping aside the one it acted on.
func (o *owner) swap() {
	o.side, *o.kept = *o.kept, o.side
}

// step is a workload timer's message: owner i has something to do.
type step struct{ i int }

// semReleased answers a semaphore's or permit's release; ok is false for
// a permit the semaphore no longer counts as held (its lease ended).
type semReleased struct {
	owner string
	ok    bool
	err   error
}

// countedDown answers a latch's count-down: the count after.
type countedDown struct {
	owner string
	count int64
	err   error
}

// workload is one client's workers, as one actor that talks to the engine
// by messages, as an actor-based application would.
type workload struct {
	w       *world
	o       *Options
	cl      *client
	rec     *recorder
	targets []target
	// members are the locks MultiLocks are made of.
	members []target
	owners  []*owner
	clock   *clientClock
	self    *actor.PID
}

func (wl *workload) Receive(ctx actor.Context) {
	if wl.w.teardown.Load() {
		return // the run is over: what comes now is the engines stopping
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		wl.self = ctx.Self()
		for _, o := range wl.owners {
			wl.later(o, wl.w.jitter(0, 100*time.Millisecond))
		}
	case *step:
		if o := wl.owners[m.i]; o.multi != nil {
			wl.multiStep(ctx, o)
		} else {
			wl.act(ctx, o)
		}
	case *messages.Acquired:
		if o := wl.byID(m.Owner); o.multi != nil {
			wl.onMemberAcquired(ctx, o, m)
		} else {
			wl.onAcquired(ctx, o, m)
		}
	case *messages.AcquireFailed:
		o := wl.byID(m.Owner)
		if o.multi != nil {
			wl.onMemberRefused(ctx, o, m)
			break
		}
		wl.rec.answer(o.pending, false, isFault(m.Err), 0)
		if isFault(m.Err) {
			wl.ghost(o)
		}
		wl.endCycle(o)
	case *messages.Released:
		if o := wl.byID(m.Owner); o.multi != nil {
			wl.onMemberReleased(o, m.Name, nil)
		} else {
			wl.onReleased(o, true, nil)
		}
	case *messages.ReleaseFailed:
		if o := wl.byID(m.Owner); o.multi != nil {
			wl.onMemberReleased(o, m.Name, m.Err)
		} else {
			wl.onReleased(o, false, m.Err)
		}
	case *semReleased:
		wl.onReleased(wl.byID(m.owner), m.ok, m.err)
	case *countedDown:
		o := wl.byID(m.owner)
		wl.rec.answer(o.pending, m.err == nil, m.err != nil, m.count)
		wl.endCycle(o)
	case *messages.LockLost:
		wl.onLost(m)
	}
}

// onLost ends the hold the engine told its owner it lost: the one the
// owner acts on, or the side of a downgrade it kept.
func (wl *workload) onLost(m *messages.LockLost) {
	o := wl.byID(m.Owner)
	if o.multi != nil {
		wl.onMemberLost(o, m)
		return
	}
	if o.hold >= 0 && m.Name == o.tgt.name && m.Kind == o.tgt.kind {
		wl.endHold(o, &o.hold, EndLost)
	} else if k := o.kept; k != nil && k.hold >= 0 && m.Name == k.tgt.name && m.Kind == k.tgt.kind {
		wl.endHold(o, &k.hold, EndLost)
	}
}

// isFault tells an error of the system (unknown outcome) from a refusal.
func isFault(err error) bool {
	return err != nil && !errors.Is(err, messages.ErrTimeout) && !errors.Is(err, messages.ErrNotObtained) &&
		!errors.Is(err, messages.ErrNotHeld) && !errors.Is(err, messages.ErrNotLocked) &&
		!errors.Is(err, messages.ErrAlreadyHeld)
}

func (wl *workload) byID(id string) *owner {
	for _, o := range wl.owners {
		if o.id == id {
			return o
		}
	}
	panic("sim: unknown owner " + id)
}

// later sends owner o a step d from now, on its client's clock.
func (wl *workload) later(o *owner, d time.Duration) {
	sys, self, i := wl.cl.sys, wl.self, o.i
	wl.clock.AfterFunc(d, func() { sys.Root.Send(self, &step{i: i}) })
}

// request sends req to the engine with the workload as its sender, as a
// Client does: straight to the key actor of its name while root has one
// (actors.Routes), so that every run plays the passivation handshake.
func (wl *workload) request(ctx actor.Context, req any) {
	wl.cl.routes.Request(ctx, wl.cl.root, req, ctx.Self())
}

func (wl *workload) reqID(o *owner) string {
	o.seq++
	return fmt.Sprintf("%s-r%d", o.id, o.seq)
}

// act starts owner o's next step: an acquire when idle, else a release.
func (wl *workload) act(ctx actor.Context, o *owner) {
	if o.busy {
		return
	}
	if o.releases > 0 {
		if o.kept != nil && o.kept.tgt.kind == messages.KindWriteLock {
			o.swap() // a downgrade releases the write holds first, the read kept
		}
		wl.release(ctx, o)
		return
	}
	w := wl.w
	o.tgt = wl.targets[w.rng.IntN(len(wl.targets))]
	o.lease, o.mixed = 0, false
	switch o.tgt.kind {
	case messages.KindCountDownLatch:
		phase := min(int(w.now*latchPhases/wl.o.Length), latchPhases-1)
		o.tgt.name = o.tgt.latch(phase)
		if w.chance(0.5) {
			wl.countDown(o)
			return
		}
	case messages.KindPermitSemaphore:
		// Most permits have the lease locks take; some a short one their
		// owners often outlive; a few never expire.
		switch n := w.rng.IntN(10); {
		case n < 3:
			o.lease = wl.o.Lease / 4
		case n < 9:
			o.lease = wl.o.Lease
		}
	case messages.KindSemaphore:
	default:
		if w.chance(0.3) {
			o.lease = wl.o.Lease
		}
	}
	if o.tgt.kind == messages.KindGroupLock {
		o.values = groupValues(w)
	}
	wl.acquire(ctx, o, w.chance(0.2))
}

// countDown counts o's latch down once, by a script call as an application
// does (a count-down has no owner and no waiting). It runs as a job of its
// own, so the workload goes on receiving meanwhile.
func (wl *workload) countDown(o *owner) {
	o.busy = true
	o.pending = wl.rec.op(Op{Client: wl.cl.id, Owner: o.id, Name: o.tgt.name, Kind: o.tgt.kind, Action: ActCountDown,
		Permits: 1})
	cl, name, reqID, sys, self, twice := wl.cl, o.tgt.name, wl.reqID(o), wl.cl.sys, wl.self, wl.o.doubleCountDown
	wl.w.schedule(cl, func() {
		n, err := cl.scripts.LatchCountDown(context.Background(), cl.rdb, name, reqID)
		if twice && err == nil {
			n, err = cl.scripts.LatchCountDown(context.Background(), cl.rdb, name, reqID+"-again")
		}
		sys.Root.Send(self, &countedDown{owner: o.id, count: n, err: err})
	})
}

func (wl *workload) acquire(ctx actor.Context, o *owner, try bool) {
	w := wl.w
	now := wl.clock.Now()
	req := &messages.Acquire{Name: o.tgt.name, Kind: o.tgt.kind, Owner: o.id, RequestID: wl.reqID(o),
		Lease: o.lease, Watch: true, Values: o.valuesOf(o.tgt)}
	act := ActAcquire
	switch {
	case try:
		req.Deadline = now
		act = ActTry
	case w.chance(0.8) || o.tgt.kind == messages.KindCountDownLatch:
		// A latch's await always has a deadline: its latch may never
		// reach zero.
		req.Deadline = now.Add(w.jitter(wl.o.Watchdog/2, 3*wl.o.Watchdog))
	}
	switch o.tgt.kind {
	case messages.KindSemaphore:
		req.Permits, req.Lease = 1, 0
	case messages.KindCountDownLatch:
		req.Lease = 0
	case messages.KindFairLock, messages.KindNonReentrantFairLock:
		if !req.Deadline.IsZero() {
			req.Wait = max(time.Millisecond, req.Deadline.Sub(now))
		}
	case messages.KindSpinLock:
		req.BackOff = wl.o.spinBackOff
	}
	o.busy = true
	o.pending = wl.rec.op(Op{Client: wl.cl.id, Owner: o.id, Name: o.tgt.name, Kind: o.tgt.kind, Action: act,
		Permits: max(1, req.Permits), Lease: req.Lease, Values: req.Values})
	wl.request(ctx, req)
}

func (wl *workload) onAcquired(ctx actor.Context, o *owner, m *messages.Acquired) {
	w := wl.w
	wl.rec.answer(o.pending, true, false, m.Token)
	o.busy = false
	if o.tgt.kind == messages.KindCountDownLatch {
		wl.endCycle(o) // the latch reached zero: nothing to hold
		return
	}
	if o.hold < 0 {
		hd := Hold{Client: wl.cl.id, Owner: o.id, Name: o.tgt.name, Kind: o.tgt.kind, Permits: 1,
			Asked: wl.rec.ops[o.pending].Call, From: w.now, To: -1, Token: m.Token}
		if o.tgt.kind == messages.KindPermitSemaphore {
			hd.Lease, o.permitID = o.lease, m.PermitID
		}
		o.hold = len(wl.rec.holds)
		wl.rec.holds = append(wl.rec.holds, groupHolds(hd, o.valuesOf(o.tgt))...)
	}
	o.releases++
	if o.tgt.kind == messages.KindWriteLock && o.kept == nil && w.chance(0.25) {
		wl.downgrade(ctx, o)
		return
	}
	reentrant := o.tgt.kind.Held() && o.releases < 3
	if reentrant && w.chance(0.15) {
		if o.tgt.kind == messages.KindReadLock && w.chance(0.5) {
			// The reentry takes the read lock in the other lease mode.
			if o.lease > 0 {
				o.lease = 0
			} else {
				o.lease = wl.readLease(1)
			}
			o.mixed = true
		}
		wl.acquire(ctx, o, true)
		return
	}
	hold := w.jitter(time.Millisecond, wl.o.Watchdog/4)
	// Also while downgrading: the side whose lease ran out is given back
	// while the owner holds the other.
	if o.lease > 0 && w.chance(0.1) {
		hold = o.lease + w.jitter(0, o.lease) // outlives its lease: the engine tells it
	}
	wl.later(o, hold)
}

// readLease draws a read hold's lease: from the watchdog (0, when from is
// 0), the explicit lease, or a long one that outlives the watchdog's
// lease.
func (wl *workload) readLease(from int) time.Duration {
	switch wl.w.rng.IntN(3-from) + from {
	case 0:
		return 0
	case 1:
		return wl.o.Lease
	default:
		return wl.o.Watchdog + wl.o.Lease
	}
}

// downgrade has o, which holds the write lock, take the read side of the
// same name too, the write holding kept aside.
func (wl *workload) downgrade(ctx actor.Context, o *owner) {
	o.kept = &side{tgt: target{name: o.tgt.name, kind: messages.KindReadLock}, hold: -1, lease: wl.readLease(0)}
	o.swap()
	wl.acquire(ctx, o, wl.w.chance(0.5))
}

// holdOn is how long an owner holds on to what it still holds after a
// release: now and then longer than the watchdog's lease.
func (wl *workload) holdOn() time.Duration {
	if wl.w.chance(0.3) {
		return wl.w.jitter(wl.o.Watchdog/2, 2*wl.o.Watchdog)
	}
	return wl.w.jitter(time.Millisecond, wl.o.Watchdog/4)
}

// release sends one release of o's holds; the last one ends the hold.
func (wl *workload) release(ctx actor.Context, o *owner) {
	o.busy = true
	o.releases--
	last := o.releases == 0
	if last && o.hold >= 0 {
		wl.endHold(o, &o.hold, EndReleased)
	}
	o.pending = wl.rec.op(Op{Client: wl.cl.id, Owner: o.id, Name: o.tgt.name, Kind: o.tgt.kind, Action: ActRelease,
		Permits: 1, Values: o.valuesOf(o.tgt)})
	if o.tgt.kind == messages.KindSemaphore {
		// A semaphore's permits are released by a script call, not through
		// the engine (a permit has no owner). It runs as a job of its own,
		// so the workload goes on receiving meanwhile.
		cl, name, reqID, sys, self := wl.cl, o.tgt.name, wl.reqID(o), wl.cl.sys, wl.self
		wl.w.schedule(cl, func() {
			_, err := cl.scripts.SemaphoreRelease(context.Background(), cl.rdb, name, reqID, 1)
			sys.Root.Send(self, &semReleased{owner: o.id, ok: err == nil, err: err})
		})
		return
	}
	if o.tgt.kind == messages.KindPermitSemaphore {
		// A permit is released by its ID, by a script call as the client's
		// handle does; one whose lease ended is refused (ok false).
		cl, name, reqID, permitID, sys, self, clock := wl.cl, o.tgt.name, wl.reqID(o), o.permitID, wl.cl.sys, wl.self,
			wl.clock
		wl.w.schedule(cl, func() {
			ok, err := cl.scripts.PermitRelease(context.Background(), cl.rdb, name, reqID, permitID, clock.Now())
			sys.Root.Send(self, &semReleased{owner: o.id, ok: ok, err: err})
		})
		return
	}
	wl.request(ctx, &messages.Release{Name: o.tgt.name, Kind: o.tgt.kind, Owner: o.id, RequestID: wl.reqID(o),
		Values: o.valuesOf(o.tgt)})
}

func (wl *workload) onReleased(o *owner, ok bool, err error) {
	wl.rec.answer(o.pending, ok && err == nil, isFault(err), 0)
	if isFault(err) {
		wl.ghost(o)
	}
	wl.endCycle(o)
}

// ghost records that Redis may hold o's lock until a lease after its
// pending operation, whose outcome is unknown. A permit that never expires
// may stay taken until the run ends (its give-back may be lost too); a
// latch's await takes nothing.
func (wl *workload) ghost(o *owner) {
	wl.ghostOf(o, o.tgt, o.lease, o.pending)
}

// ghostOf records that Redis may hold o's lock t, taken with lease, until
// a lease after the operation at index op, whose outcome is unknown.
func (wl *workload) ghostOf(o *owner, t target, lease time.Duration, op int) {
	if t.kind == messages.KindCountDownLatch {
		return
	}
	from := wl.rec.ops[op].Call
	to := wl.w.now + wl.o.Watchdog
	switch {
	case lease > 0:
		to = wl.w.now + lease
	case t.kind == messages.KindPermitSemaphore:
		to = wl.o.Length
	}
	wl.rec.holds = append(wl.rec.holds, groupHolds(Hold{Client: wl.cl.id, Owner: o.id, Name: t.name, Kind: t.kind,
		Permits: 1, Asked: from, From: from, To: to, End: EndUnknown}, o.valuesOf(t))...)
}

// endHold ends o's hold at index *hold (o's, or the side it kept) how
// end says.
func (wl *workload) endHold(o *owner, hold *int, end HoldEnd) {
	n := 1
	if wl.rec.holds[*hold].Kind == messages.KindGroupLock {
		n = len(o.values) // a hold per value, in a row
	}
	for i := *hold; i < *hold+n; i++ {
		h := &wl.rec.holds[i]
		h.end(wl.w.now, end)
		wl.w.tr.add(wl.w.now, "c%d %s hold %s %s %s", wl.cl.id, o.id, h.Name, h.Kind, h.End)
	}
	*hold = -1
}

// groupPool are the values of every group lock of the workload.
var groupPool = []string{"a", "b", "c", "d"}

// groupValues draws the values a group lock's owner asks for: one to three
// of groupPool, in pool order.
func groupValues(w *world) []string {
	n := 1 + w.rng.IntN(3)
	picked := w.rng.Perm(len(groupPool))[:n]
	slices.Sort(picked)
	values := make([]string, n)
	for i, p := range picked {
		values[i] = groupPool[p]
	}
	return values
}

// valuesOf is o's values when t is a group lock, else nil.
func (o *owner) valuesOf(t target) []string {
	if t.kind != messages.KindGroupLock {
		return nil
	}
	return o.values
}

// GroupValueName names a group lock's value in the history's holds: each
// value held is a Hold of its own on "<group>/<value>", so that mutual
// exclusion is checked per value.
func GroupValueName(group, value string) string { return group + "/" + value }

// groupHolds is hd, or for a group lock's values one copy of hd per
// value, named GroupValueName.
func groupHolds(hd Hold, values []string) []Hold {
	if hd.Kind != messages.KindGroupLock {
		return []Hold{hd}
	}
	holds := make([]Hold, len(values))
	for i, v := range values {
		holds[i] = hd
		holds[i].Name = GroupValueName(hd.Name, v)
	}
	return holds
}

// endCycle sends o's next release at once (after holding on a while for a
// read lock taken in both lease modes), goes on to the other side of a
// downgrade, or lets o think a while before its next acquire.
func (wl *workload) endCycle(o *owner) {
	o.busy = false
	switch {
	case o.releases > 0 && o.mixed:
		wl.later(o, wl.holdOn())
	case o.releases > 0:
		wl.later(o, 0)
	case o.kept != nil:
		// The write holds are released (the read is held on), or the read
		// side was refused (the write is released next).
		o.swap()
		o.kept = nil
		wl.later(o, wl.holdOn())
	default:
		wl.later(o, wl.w.jitter(0, 200*time.Millisecond))
	}
}
