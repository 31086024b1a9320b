package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/warden-go/warden/internal/quorum"
	"github.com/warden-go/warden/messages"
)

// rlMember is a process's actor in the engine of one master: the process's
// owners send their requests to that engine's root with it as the sender,
// and it hands every reply (and the owners' timer messages, on master 0)
// to the process. All of a process's members run only while the process
// runs (they share its pause and crash), and one job runs at a time, so
// the owners' state needs no lock.
type rlMember struct {
	ps     *rlProcess
	master int
}

func (mb *rlMember) Receive(ctx actor.Context) {
	ps := mb.ps
	if ps.run.w.teardown.Load() {
		return // the run is over: what comes now is the engines stopping
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if mb.master == 0 {
			for _, ow := range ps.owners {
				ow.wait(ps.run.w.jitter(0, 100*time.Millisecond))
			}
		}
	case *rlStep:
		if ow := ps.owners[m.owner]; m.gen == ow.gen {
			ow.step()
		}
	case *rlNodeTimeout:
		ps.owners[m.owner].nodeTimeout(m.attempt, m.master)
	case *rlExpired:
		ps.owners[m.owner].expired(m.hold)
	case *messages.Acquired:
		ps.byID(m.Owner).acquireAnswered(mb.master, m.RequestID, m, nil)
	case *messages.AcquireFailed:
		ps.byID(m.Owner).acquireAnswered(mb.master, m.RequestID, nil, m.Err)
	case *messages.Released:
		ps.byID(m.Owner).releaseAnswered(m.RequestID, true)
	case *messages.ReleaseFailed:
		ps.byID(m.Owner).releaseAnswered(m.RequestID, false)
	case *messages.LockLost:
		ps.byID(m.Owner).memberLost(mb.master, m.Holding)
	}
}

// rlStep is an owner's timer: gen tells a current timer from one that was
// replaced after it had fired.
type rlStep struct{ owner, gen int }

// rlNodeTimeout is the per-node timeout of one master's attempt.
type rlNodeTimeout struct{ owner, attempt, master int }

// rlExpired is a fixed lease's validity end.
type rlExpired struct{ owner, hold int }

// rlProcess is one process's RedLock owners and the member actors that
// connect them to its engines.
type rlProcess struct {
	run    *redLockRun
	pr     *process
	pids   []*actor.PID // the member actors, by master
	owners []*rlOwner
}

func (ps *rlProcess) byID(id string) *rlOwner {
	for _, ow := range ps.owners {
		if ow.id == id {
			return ow
		}
	}
	panic("sim: no owner " + id)
}

// clock is the process's clock (its engines all read the same skew).
func (ps *rlProcess) clock() clockwork.Clock { return &clientClock{w: ps.run.w, cl: ps.pr.members[0]} }

// send hands msg to master m's engine, with the process's member there as
// the sender.
func (ps *rlProcess) send(m int, msg any) {
	cl := ps.pr.members[m]
	cl.sys.Root.RequestWithCustomSender(cl.root, msg, ps.pids[m])
}

// post sends msg to the process's member on master 0, from a timer.
func (ps *rlProcess) post(msg any) {
	cl := ps.pr.members[0]
	cl.sys.Root.Send(ps.pids[0], msg)
}

// The phases of an owner's cycle.
const (
	rlIdle       = iota // thinking; its step starts an acquire
	rlAttempting        // an attempt is out on every master
	rlPausing           // between two attempts; its step tries again
	rlHolding           // it holds the RedLock; its step unlocks
	rlReleasing         // releases are out; their answers end the cycle
)

// memberState is one master's part in an attempt.
type memberState int

const (
	memberPending memberState = iota
	memberTaken
	memberRefused // held by another owner: not a failure
	memberFailed  // an error, or no reply within the per-node timeout
)

// rlOwner is one RedLock user: it takes a RedLock on a name (watchdog
// mode or a fixed lease, drawn from the seed) with the decisions of
// client.RedLock, holds it a while, unlocks it on every master, thinks,
// and again.
type rlOwner struct {
	proc  *rlProcess
	id    string
	index int // in its process's owners
	name  string
	fixed bool
	phase int
	gen   int // of the current step timer
	timer clockwork.Timer
	seq   int

	// The acquire: its wait's end, the current attempt's number, start
	// (on the process's clock), request IDs and members' states.
	deadline time.Time
	attempt  int
	start    time.Time
	asked    time.Duration
	rids     []string
	states   []memberState
	timers   []clockwork.Timer
	// late are the requests given up on at the per-node timeout, by
	// request ID: one that is granted all the same is given back. As
	// client.Lock's wait does, an attempt ends only once the engine
	// answered each one's Cancel (it does at once), so a give-back goes
	// out before the next attempt's try.
	late map[string]lateTry

	// The holding: its RedLockHold, the members it holds with each one's
	// engine holding, and a fixed lease's validity timer.
	hold     int
	held     []bool
	holdings []uint64
	expiry   clockwork.Timer

	// relPending are the releases whose answers the owner waits for;
	// released counts those that released; then runs when all answered.
	relPending map[string]bool
	released   int
	then       func(released int)
}

func (ow *rlOwner) run() *redLockRun { return ow.proc.run }
func (ow *rlOwner) n() int           { return len(ow.proc.pr.members) }

func (ow *rlOwner) reqID() string {
	ow.seq++
	return fmt.Sprintf("%s-%d", ow.id, ow.seq)
}

// wait arms the owner's step timer d from now.
func (ow *rlOwner) wait(d time.Duration) {
	if ow.timer != nil {
		ow.timer.Stop()
	}
	ow.gen++
	msg := &rlStep{owner: ow.index, gen: ow.gen}
	ow.timer = ow.proc.clock().AfterFunc(d, func() { ow.proc.post(msg) })
}

func (ow *rlOwner) trace(format string, args ...any) {
	w := ow.run().w
	w.tr.add(w.now, "%s %s", ow.id, fmt.Sprintf(format, args...))
}

// lease is what the members are taken with: 0 in watchdog mode.
func (ow *rlOwner) lease() time.Duration {
	if ow.fixed {
		return ow.run().o.Lease
	}
	return 0
}

// full is the lease validity counts from: the watchdog's in watchdog
// mode, as client.RedLock counts it.
func (ow *rlOwner) full() time.Duration {
	if ow.fixed {
		return ow.run().o.Lease
	}
	return ow.run().o.Watchdog
}

func (ow *rlOwner) step() {
	switch ow.phase {
	case rlIdle:
		ow.begin()
	case rlPausing:
		ow.tryAll()
	case rlHolding:
		ow.unlock()
	}
}

// begin starts an acquire: a name and a mode drawn from the seed, a wait
// of a tenth of the watchdog to half of it (TryLockWait).
func (ow *rlOwner) begin() {
	rl := ow.run()
	w := rl.w
	ow.name = fmt.Sprintf("redlock-%d", w.rng.IntN(rl.o.Names))
	ow.fixed = w.chance(0.5)
	ow.deadline = ow.proc.clock().Now().Add(w.jitter(rl.o.Watchdog/10, rl.o.Watchdog/2))
	ow.asked = w.now
	rl.ops++
	ow.trace("acquire %s fixed=%t", ow.name, ow.fixed)
	ow.tryAll()
}

// tryAll is one attempt: a try on every master at once, each bounded by
// the per-node timeout.
func (ow *rlOwner) tryAll() {
	rl := ow.run()
	ow.phase = rlAttempting
	ow.attempt++
	rl.attempts++
	clock := ow.proc.clock()
	ow.start = clock.Now()
	n := ow.n()
	ow.rids = make([]string, n)
	ow.states = make([]memberState, n)
	ow.timers = make([]clockwork.Timer, n)
	ow.holdings = make([]uint64, n)
	timeout := quorum.NodeTimeout(ow.full())
	for m := range n {
		ow.rids[m] = ow.reqID()
		ow.proc.send(m, &messages.Acquire{Name: ow.name, Kind: messages.KindLock, Owner: ow.id, RequestID: ow.rids[m],
			Lease: ow.lease(), Deadline: clock.Now(), Watch: true})
		msg := &rlNodeTimeout{owner: ow.index, attempt: ow.attempt, master: m}
		ow.timers[m] = clock.AfterFunc(timeout, func() { ow.proc.post(msg) })
	}
}

// acquireAnswered takes master m's answer to an attempt's try.
func (ow *rlOwner) acquireAnswered(m int, rid string, a *messages.Acquired, err error) {
	if lt, ok := ow.late[rid]; ok {
		delete(ow.late, rid)
		if a != nil {
			// Granted just before the cancel: given back, as client.Lock's
			// wait does; nobody waits for the answer.
			ow.proc.send(m, &messages.Release{Name: lt.name, Kind: messages.KindLock, Owner: ow.id, RequestID: ow.reqID()})
		}
		if ow.phase == rlAttempting && lt.attempt == ow.attempt {
			ow.decide()
		}
		return
	}
	if ow.phase != rlAttempting || ow.rids[m] != rid || ow.states[m] != memberPending {
		return
	}
	ow.timers[m].Stop()
	switch {
	case a != nil:
		ow.states[m], ow.holdings[m] = memberTaken, a.Holding
	case errors.Is(err, messages.ErrTimeout):
		ow.states[m] = memberRefused
	default:
		ow.states[m] = memberFailed
	}
	ow.decide()
}

// nodeTimeout gives up on master m's try of attempt: it counts as failed,
// and its request is cancelled.
func (ow *rlOwner) nodeTimeout(attempt, m int) {
	if ow.phase != rlAttempting || ow.attempt != attempt || ow.states[m] != memberPending {
		return
	}
	ow.states[m] = memberFailed
	if ow.late == nil {
		ow.late = map[string]lateTry{}
	}
	ow.late[ow.rids[m]] = lateTry{name: ow.name, attempt: ow.attempt}
	ow.proc.send(m, &messages.Cancel{Name: ow.name, Kind: messages.KindLock, Owner: ow.id, RequestID: ow.rids[m]})
	ow.decide()
}

// holds is client.RedLock's decision, or a broken RedLock's when a test
// asks for one.
func (ow *rlOwner) holds(taken int, now, validUntil time.Time) bool {
	if q := ow.run().o.quorum; q > 0 {
		return taken >= q && now.Before(validUntil)
	}
	return quorum.Holds(ow.n(), taken, now, validUntil)
}

// lost is client.RedLock's loss rule over the members still held (a
// broken RedLock keeps its own quorum).
func (ow *rlOwner) lost(held int) bool {
	if q := ow.run().o.quorum; q > 0 {
		return held < q
	}
	return quorum.Lost(ow.n(), held, time.Time{}, time.Time{})
}

// lateTry is a try given up on: its name and attempt.
type lateTry struct {
	name    string
	attempt int
}

// decide ends an attempt once every master answered or timed out and
// every timed-out try's cancel was answered.
func (ow *rlOwner) decide() {
	for _, lt := range ow.late {
		if lt.attempt == ow.attempt {
			return
		}
	}
	taken, failed := 0, 0
	for _, s := range ow.states {
		switch s {
		case memberPending:
			return
		case memberTaken:
			taken++
		case memberFailed:
			failed++
		}
	}
	rl := ow.run()
	w := rl.w
	clock := ow.proc.clock()
	now := clock.Now()
	validUntil := quorum.ValidUntil(ow.start, ow.full())
	if ow.holds(taken, now, validUntil) {
		ow.phase = rlHolding
		ow.held = make([]bool, ow.n())
		for m, s := range ow.states {
			ow.held[m] = s == memberTaken
		}
		rl.holds = append(rl.holds, RedLockHold{Process: ow.proc.pr.id, Owner: ow.id, Name: ow.name, Fixed: ow.fixed,
			Asked: ow.asked, From: w.now, To: -1, Taken: taken})
		ow.hold = len(rl.holds) - 1
		ow.trace("holds %s on %d of %d, valid %v", ow.name, taken, ow.n(), validUntil.Sub(now))
		hold := w.jitter(time.Millisecond, rl.o.Watchdog/6)
		if ow.fixed {
			msg := &rlExpired{owner: ow.index, hold: ow.hold}
			ow.expiry = clock.AfterFunc(validUntil.Sub(now), func() { ow.proc.post(msg) })
			if w.chance(0.1) {
				hold = rl.o.Lease + w.jitter(0, rl.o.Lease) // outlives its validity: the expiry tells it
			}
		}
		ow.wait(hold)
		return
	}
	ow.trace("attempt on %s took %d, failed %d", ow.name, taken, failed)
	var taker []int
	for m, s := range ow.states {
		if s == memberTaken {
			taker = append(taker, m)
		}
	}
	ow.release(taker, func(int) {
		clock := ow.proc.clock()
		switch {
		case quorum.OutOfReach(ow.n(), failed):
			ow.trace("acquire %s failed: a majority is out of reach", ow.name)
			ow.think()
		case !clock.Now().Before(ow.deadline):
			ow.trace("acquire %s ran out of time", ow.name)
			ow.think()
		default:
			// client.RedLock's retry pause: up to 50 ms, never past the wait.
			d := time.Duration(w.rng.Int64N(int64(50*time.Millisecond))) + time.Millisecond
			ow.phase = rlPausing
			ow.wait(min(d, max(0, ow.deadline.Sub(clock.Now()))))
		}
	})
}

// release sends one release to each of masters and runs then with how
// many released once all answered.
func (ow *rlOwner) release(masters []int, then func(released int)) {
	ow.phase = rlReleasing
	ow.relPending = map[string]bool{}
	ow.released = 0
	ow.then = then
	if len(masters) == 0 {
		then(0)
		return
	}
	for _, m := range masters {
		rid := ow.reqID()
		ow.relPending[rid] = true
		ow.proc.send(m, &messages.Release{Name: ow.name, Kind: messages.KindLock, Owner: ow.id, RequestID: rid})
	}
}

func (ow *rlOwner) releaseAnswered(rid string, ok bool) {
	if !ow.relPending[rid] {
		return // a give-back's answer
	}
	delete(ow.relPending, rid)
	if ok {
		ow.released++
	}
	if len(ow.relPending) == 0 {
		ow.then(ow.released)
	}
}

// endHold ends the holding how end says, now.
func (ow *rlOwner) endHold(end string) {
	rl := ow.run()
	h := &rl.holds[ow.hold]
	h.To, h.End = rl.w.now, end
	ow.trace("hold %s ends: %s", ow.name, end)
	if ow.expiry != nil {
		ow.expiry.Stop()
		ow.expiry = nil
	}
}

// all lists every master: an Unlock releases on each.
func (ow *rlOwner) all() []int {
	out := make([]int, ow.n())
	for m := range out {
		out[m] = m
	}
	return out
}

// unlock ends the holding and releases on every master (Unlock).
func (ow *rlOwner) unlock() {
	ow.endHold("released")
	ow.run().ops++
	ow.release(ow.all(), func(released int) {
		ow.trace("unlock %s released on %d of %d", ow.name, released, ow.n())
		ow.think()
	})
}

// memberLost takes master m's engine's word that the member's holding is
// lost: the RedLock is lost once fewer than a majority are held.
func (ow *rlOwner) memberLost(m int, holding uint64) {
	if ow.phase != rlHolding || !ow.held[m] || ow.holdings[m] != holding {
		return
	}
	ow.held[m] = false
	held := 0
	for _, h := range ow.held {
		if h {
			held++
		}
	}
	if ow.lost(held) {
		ow.endHold("lost")
		ow.release(ow.all(), func(int) { ow.think() })
	}
}

// expired is a fixed lease's validity end: the holding is lost.
func (ow *rlOwner) expired(hold int) {
	if ow.phase != rlHolding || ow.hold != hold {
		return
	}
	ow.expiry = nil
	ow.endHold("validity")
	ow.release(ow.all(), func(int) { ow.think() })
}

// think lets the owner rest a while before its next acquire.
func (ow *rlOwner) think() {
	ow.phase = rlIdle
	ow.hold = -1
	ow.wait(ow.run().w.jitter(0, 200*time.Millisecond))
}
