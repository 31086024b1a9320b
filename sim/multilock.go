package sim

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/internal/multi"
	"github.com/warden-go/warden/messages"
)

// The workload's MultiLocks. An owner that takes MultiLocks (one in three,
// drawn from the seed when the run has reentrant or fair locks) does so
// over and over: it lists 2 or 3 of those locks in an order of its own,
// takes them all (blocking, trying with a wait, or trying once; in
// watchdog mode or with the explicit lease), holds the set a while (now
// and then for seconds, longer than a MultiLock waits for a later member,
// or past a fixed lease), releases every member, thinks, and again.
// Its members are the names the other owners lock one at a time, and the
// other clients' MultiLocks draw from the same few, so members overlap
// between owners and between clients.
//
// It acts on package internal/multi's decisions, as client.MultiLock does
// with its blocking calls, but through the engine's messages: it asks for
// each member in canonical order with the deadline the plan gives it, gives
// back the members taken when an attempt does not hold the set (all of
// them at once, waiting for every answer), pauses a time drawn from the
// seed, and tries again while the plan allows.

// multiOwnerShare is the chance that an owner takes MultiLocks.
const multiOwnerShare = 1.0 / 3

// brokenMultiLock names a deliberately broken MultiLock, for the tests
// that check the MultiLock checks catch it; 0 is the correct one.
type brokenMultiLock uint8

const (
	// multiKeepsTaken keeps the members an attempt took when a later one
	// is refused, instead of giving them back.
	multiKeepsTaken brokenMultiLock = iota + 1
	// multiSkipsLast answers held when every member but the last was
	// taken and the last one was refused.
	multiSkipsLast
)

// multiMembers are the locks the workload's MultiLocks are made of: its
// reentrant and fair locks (none with NoMultiLocks).
func multiMembers(o *Options, targets []target) []target {
	if o.NoMultiLocks {
		return nil
	}
	var out []target
	for _, t := range targets {
		if t.kind == messages.KindLock || t.kind == messages.KindFairLock {
			out = append(out, t)
		}
	}
	return out
}

// multiPhase is where an owner's MultiLock cycle is.
type multiPhase uint8

const (
	multiIdle       multiPhase = iota // thinking; its next step takes a set
	multiAsking                       // a member's acquire is in flight
	multiGivingBack                   // an attempt's give-backs are in flight
	multiPausing                      // its next step starts the next attempt
	multiHolding                      // it holds the set; its next step releases it
	multiReleasing                    // the set's releases are in flight
)

// multiOwner is what an owner taking MultiLocks knows.
type multiOwner struct {
	phase multiPhase
	// op is the index of its current acquire in the history's Multis.
	op   int
	plan multi.Plan
	// members are the current set, in canonical order.
	members []target
	attempt multi.Attempt
	// failed: a member was answered with an error; the acquire ends with it
	// once the members taken are given back.
	failed bool
	// askedAgain: the member in flight is asked a second time, its first
	// answer being the loss of an earlier holding (multi.Plan.MemberLost).
	askedAgain bool
	// pending is the op of the member acquire in flight, asked by reqID.
	pending int
	reqID   string
	// releases are the ops of the releases in flight, by member name (one
	// at a time per member).
	releases map[string]int
	// held is what the owner holds of each lock, by name.
	held map[string]*memberHold
}

// memberHold is what an owner holds of one member lock.
type memberHold struct {
	// hold is the index of its Hold in the history, -1 when none.
	hold int
	// count is how many grants it has not given back yet.
	count int
	// holding is the engine's id of the holding (Acquired.Holding), to
	// tell a loss of this holding from one of an earlier holding.
	holding uint64
}

func newMultiOwner() *multiOwner {
	return &multiOwner{releases: map[string]int{}, held: map[string]*memberHold{}}
}

func (m *multiOwner) member(name string) *memberHold {
	mh := m.held[name]
	if mh == nil {
		mh = &memberHold{hold: -1}
		m.held[name] = mh
	}
	return mh
}

// multiStep is owner o's timer: take a set, start the next attempt, or
// release the set held.
func (wl *workload) multiStep(ctx actor.Context, o *owner) {
	switch o.multi.phase {
	case multiIdle:
		wl.multiAcquire(ctx, o)
	case multiPausing:
		wl.multiAttempt(ctx, o)
	case multiHolding:
		wl.multiRelease(ctx, o)
	}
}

// multiAcquire draws o's next set and how to take it, and starts taking
// it.
func (wl *workload) multiAcquire(ctx actor.Context, o *owner) {
	w, m := wl.w, o.multi
	n := min(2+w.rng.IntN(2), len(wl.members))
	listed := make([]target, n)
	names := make([]string, n)
	mo := MultiOp{Client: wl.cl.id, Owner: o.id, Members: make([]MultiMember, n), Call: w.now, Return: -1,
		Until: -1, Done: -1}
	for i, j := range w.rng.Perm(len(wl.members))[:n] {
		listed[i] = wl.members[j]
		names[i] = listed[i].name
		mo.Members[i] = MultiMember{Name: listed[i].name, Kind: listed[i].kind}
	}
	m.members = multi.Sorted(listed, func(t target) multi.Member { return multi.Member{Name: t.name} })
	m.plan = multi.Plan{N: n}
	if w.chance(0.3) {
		m.plan.Lease = wl.o.Lease
	}
	now := wl.clock.Now()
	switch {
	case w.chance(0.2):
		mo.Blocking = true
	case w.chance(0.2): // one attempt
		m.plan.Deadline = now
	default:
		mo.Wait = w.jitter(wl.o.Watchdog/2, 3*wl.o.Watchdog)
		m.plan.Deadline = now.Add(mo.Wait)
	}
	mo.Lease = m.plan.Lease
	wl.rec.multis = append(wl.rec.multis, mo)
	m.op = len(wl.rec.multis) - 1
	m.failed = false
	w.tr.add(w.now, "c%d %s multilock %s lease=%v blocking=%t wait=%v", wl.cl.id, o.id, strings.Join(names, ","),
		mo.Lease, mo.Blocking, mo.Wait)
	wl.multiAttempt(ctx, o)
}

// multiAttempt starts a pass over o's members.
func (wl *workload) multiAttempt(ctx actor.Context, o *owner) {
	m := o.multi
	m.attempt = multi.Attempt{Start: wl.clock.Now()}
	wl.rec.multis[m.op].Attempts++
	wl.askMember(ctx, o)
}

// askMember asks for o's next member, with the deadline the plan gives it.
func (wl *workload) askMember(ctx actor.Context, o *owner) {
	m := o.multi
	m.phase = multiAsking
	m.askedAgain = false
	t := m.members[m.attempt.Taken]
	now := wl.clock.Now()
	deadline, wait := m.plan.Member(m.attempt.Taken, now)
	req := &messages.Acquire{Name: t.name, Kind: t.kind, Owner: o.id, RequestID: wl.reqID(o), Lease: m.plan.Lease,
		Deadline: deadline, Watch: true}
	if t.kind == messages.KindFairLock {
		req.Wait = wait
	}
	act := ActAcquire
	if !deadline.IsZero() && !deadline.After(now) {
		act = ActTry
	}
	m.pending = wl.rec.op(Op{Client: wl.cl.id, Owner: o.id, Name: t.name, Kind: t.kind, Action: act, Permits: 1,
		Lease: m.plan.Lease})
	m.reqID = req.RequestID
	wl.request(ctx, req)
}

func (wl *workload) onMemberAcquired(ctx actor.Context, o *owner, a *messages.Acquired) {
	m := o.multi
	if m.phase != multiAsking || a.RequestID != m.reqID {
		panic("sim: an answer to no member acquire of " + o.id)
	}
	wl.rec.answer(m.pending, true, false, a.Token)
	mh := m.member(a.Name)
	if mh.hold < 0 {
		wl.rec.holds = append(wl.rec.holds, Hold{Client: wl.cl.id, Owner: o.id, Name: a.Name, Kind: a.Kind, Permits: 1,
			Asked: wl.rec.ops[m.pending].Call, From: wl.w.now, To: -1})
		mh.hold = len(wl.rec.holds) - 1
	}
	mh.count++
	mh.holding = a.Holding
	m.attempt.Taken++
	if m.attempt.Taken < len(m.members) {
		wl.askMember(ctx, o)
		return
	}
	wl.endAttempt(ctx, o)
}

func (wl *workload) onMemberRefused(ctx actor.Context, o *owner, f *messages.AcquireFailed) {
	m := o.multi
	if m.phase != multiAsking || f.RequestID != m.reqID {
		panic("sim: an answer to no member acquire of " + o.id)
	}
	fault := isFault(f.Err)
	wl.rec.answer(m.pending, false, fault, 0)
	if !fault {
		wl.endAttempt(ctx, o)
		return
	}
	if m.plan.MemberLost(f.Err) {
		// An earlier holding of the member ran out while this reentry
		// was in flight: the engine gives back what it took. Asked
		// again at once, it is taken afresh; lost again, the attempt
		// was one during which a member was lost.
		wl.ghostOf(o, m.members[m.attempt.Taken], m.plan.Lease, m.pending)
		if !m.askedAgain {
			if m.attempt.Taken == 0 {
				m.attempt.Start = wl.clock.Now() // the set's lease runs from its first member's take
			}
			wl.askMember(ctx, o)
			m.askedAgain = true
			return
		}
		m.attempt.Lost = true
		wl.endAttempt(ctx, o)
		return
	}
	// An error ends the acquire: the members taken are given back first.
	wl.ghostOf(o, m.members[m.attempt.Taken], m.plan.Lease, m.pending)
	m.failed = true
	wl.giveBack(ctx, o, m.attempt.Taken)
}

// endAttempt decides, once every member was taken or one was refused,
// whether o holds the set; if not it gives back what it took.
func (wl *workload) endAttempt(ctx actor.Context, o *owner) {
	w, m := wl.w, o.multi
	held, giveBack := m.plan.Outcome(m.attempt, wl.clock.Now())
	switch wl.o.brokenMulti {
	case multiKeepsTaken:
		giveBack = 0
	case multiSkipsLast:
		if !held && m.attempt.Taken == len(m.members)-1 && m.attempt.Taken > 0 && !m.attempt.Lost {
			held = true
		}
	}
	if !held {
		w.tr.add(w.now, "c%d %s multilock took %d of %d, lost=%t: gives back %d", wl.cl.id, o.id, m.attempt.Taken,
			len(m.members), m.attempt.Lost, giveBack)
		wl.giveBack(ctx, o, giveBack)
		return
	}
	wl.answerMulti(o, true, false)
	m.phase = multiHolding
	hold := wl.holdOn() // now and then long: other MultiLocks then give up a member's wait and try again
	if m.plan.Lease > 0 && w.chance(0.1) {
		hold = m.plan.Lease + w.jitter(0, m.plan.Lease) // outlives its lease: the engine tells it
	}
	wl.later(o, hold)
}

// giveBack releases one hold of each of o's first n members, all at once;
// afterGiveBack follows once every release is answered.
func (wl *workload) giveBack(ctx actor.Context, o *owner, n int) {
	o.multi.phase = multiGivingBack
	if n == 0 {
		wl.afterGiveBack(o)
		return
	}
	for _, t := range o.multi.members[:n] {
		wl.releaseMember(ctx, o, t)
	}
}

// afterGiveBack ends the acquire, or pauses before the next attempt.
func (wl *workload) afterGiveBack(o *owner) {
	m := o.multi
	if m.failed {
		wl.answerMulti(o, false, true)
		wl.multiThink(o)
		return
	}
	now := wl.clock.Now()
	if !multi.Again(m.plan.Deadline, now) {
		wl.answerMulti(o, false, false)
		wl.multiThink(o)
		return
	}
	m.phase = multiPausing
	wl.later(o, multi.Pause(m.plan.Deadline, now, wl.w.rng.Uint64()))
}

// multiRelease releases one hold of every member of the set o holds, all
// at once, as MultiLock.Unlock does (a member lost meanwhile too: its
// release is refused).
func (wl *workload) multiRelease(ctx actor.Context, o *owner) {
	m := o.multi
	m.phase = multiReleasing
	wl.rec.multis[m.op].Until = wl.w.now
	for _, t := range m.members {
		wl.releaseMember(ctx, o, t)
	}
}

// releaseMember sends one release of member t; the hold ends with its
// last grant's release.
func (wl *workload) releaseMember(ctx actor.Context, o *owner, t target) {
	m := o.multi
	mh := m.member(t.name)
	if mh.count > 0 {
		mh.count--
		if mh.count == 0 && mh.hold >= 0 {
			wl.endHold(o, &mh.hold, EndReleased)
		}
	}
	m.releases[t.name] = wl.rec.op(Op{Client: wl.cl.id, Owner: o.id, Name: t.name, Kind: t.kind, Action: ActRelease,
		Permits: 1})
	wl.request(ctx, &messages.Release{Name: t.name, Kind: t.kind, Owner: o.id, RequestID: wl.reqID(o)})
}

func (wl *workload) onMemberReleased(o *owner, name string, err error) {
	m := o.multi
	i, ok := m.releases[name]
	if !ok {
		panic("sim: an answer to no member release of " + o.id)
	}
	delete(m.releases, name)
	op := &wl.rec.ops[i]
	wl.rec.answer(i, err == nil, isFault(err), 0)
	if isFault(err) {
		wl.ghostOf(o, target{name: name, kind: op.Kind}, m.plan.Lease, i)
	}
	if len(m.releases) > 0 {
		return
	}
	switch m.phase {
	case multiGivingBack:
		wl.afterGiveBack(o)
	case multiReleasing:
		wl.rec.multis[m.op].Done = wl.w.now
		wl.w.tr.add(wl.w.now, "c%d %s multilock released", wl.cl.id, o.id)
		wl.multiThink(o)
	}
}

// onMemberLost ends the member hold whose loss the engine told; a loss
// during an attempt of a member it took fails the attempt.
func (wl *workload) onMemberLost(o *owner, l *messages.LockLost) {
	m := o.multi
	mh := m.held[l.Name]
	if mh == nil || mh.hold < 0 || mh.holding != l.Holding {
		return // a holding given back already
	}
	wl.endHold(o, &mh.hold, EndLost)
	mh.count = 0
	if m.phase == multiAsking {
		for _, t := range m.members[:m.attempt.Taken] {
			if t.name == l.Name {
				m.attempt.Lost = true
			}
		}
	}
}

// answerMulti records the answer of o's MultiLock acquire.
func (wl *workload) answerMulti(o *owner, ok, failed bool) {
	mo := &wl.rec.multis[o.multi.op]
	mo.Return, mo.OK, mo.Err = wl.w.now, ok, failed
	if !ok {
		mo.Done = wl.w.now
	}
	wl.w.tr.add(wl.w.now, "c%d %s multilock ok=%t err=%t attempts=%d", wl.cl.id, o.id, ok, failed, mo.Attempts)
}

// multiThink lets o think a while before its next set.
func (wl *workload) multiThink(o *owner) {
	o.multi.phase = multiIdle
	wl.later(o, wl.w.jitter(0, 200*time.Millisecond))
}
