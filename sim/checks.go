package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/warden-go/warden/messages"
)

// limits names, for each fault that can break a guarantee, the checks it
// breaks. warden cannot do better there; a violation of one of these checks
// in a run with such a fault is reported as excused, naming the fault.
// Every other violation fails the run.
//
//   - A Redis restart that loses data erases held locks and the fencing
//     counter: another owner takes the lock before the holder's renewal
//     finds it gone, and tokens start again from 1.
//   - A pause of the holder's process longer than its lease (a GC pause)
//     lets the lease run out while nothing in the process can act; it is
//     told once it runs again, after another owner took the lock.
//   - A clock jump of the holder's process moves when it believes its lease
//     ends: a backward jump makes it believe it holds after Redis let the
//     lock expire. A permit-expirable semaphore's scripts take the
//     client's clock as now: a jumped client's permits end early in the
//     others' eyes, and its scripts reclaim the others' permits early.
//   - A restart also loses the permits held and the latches' counts, which
//     the application sets again: every permit is free once more while
//     owners still hold theirs, and a latch already at zero counts again.
//   - Any fault that stops a process from reaching Redis (partition, pause,
//     crash, restart, clock jump) can keep a waiter from the lock while it
//     is free; lost messages must not.
//   - A lost request or reply, or a partition, holds a key or count actor's
//     one Redis call until it times out (redisio.IOTimeout, 10 s): that
//     name's other requests in that process wait meanwhile, so a waiter
//     may wait while the lock is free, and one whose deadline passes is
//     answered with a timeout though the lock was free, which the
//     linearizability check counts as a refusal where none was possible.
//   - A MultiLock waits for its members as any waiter does: what can keep
//     a waiter from a free lock (starvation) can keep a MultiLock from a
//     free set (multilock progress), and for the same reasons.
//
// No fault excuses all-or-none: it compares what a MultiLock's owner was
// told of each member (granted, refused, lost, released) with what the
// MultiLock answered, and a fault changes what the owner is told, not how
// the MultiLock must answer it.
//
// Lost requests and replies, lost messages, latency and partitions excuse
// no violation of exclusion, told-before, fencing, permits or latch: a
// holding whose lease ends while a request of its owner is in flight is
// reported at the lease's end, and the holds a late answer shows Redis
// kept are given back.
var limits = map[FaultKind][]string{
	FaultRestart: {checkExclusion, checkToldBefore, checkFencing, checkStarvation, checkLinearizable, checkPermitCount, checkLatch,
		checkMultiProgress},
	FaultPause:       {checkExclusion, checkToldBefore, checkStarvation, checkLinearizable, checkMultiProgress},
	FaultClockJump:   {checkExclusion, checkToldBefore, checkStarvation, checkLinearizable, checkPermitCount, checkMultiProgress},
	FaultPartition:   {checkStarvation, checkLinearizable, checkMultiProgress},
	FaultLostReply:   {checkStarvation, checkLinearizable, checkMultiProgress},
	FaultLostRequest: {checkStarvation, checkLinearizable, checkMultiProgress},
	FaultCrash:       {checkStarvation, checkMultiProgress},
}

// Limits returns the checks fault k can break, as documented at limits;
// nil for a fault that breaks none (a new slice on each call).
func Limits(k FaultKind) []string { return slices.Clone(limits[k]) }

// checkGroupAllOrNone is the linearizability check of a group lock (see
// CheckLinearizable): each acquire took all of its values or none at one
// instant, each refusal came while another owner held one of them. A group
// lock that took some values while it waited for the others fails it: a
// try of a value it took is refused while nobody held that value. The
// faults that excuse linearizability excuse it.
const checkGroupAllOrNone = "group all-or-none"

const (
	checkExclusion    = "mutual exclusion"
	checkToldBefore   = "told before"
	checkFencing      = "fencing"
	checkStarvation   = "starvation"
	checkLinearizable = "linearizability"
)

// check runs every checker over h and marks the violations a fault
// excuses; unknown lists the checks that could not decide.
func check(h *History, o *Options) (vs []Violation, unknown []string) {
	vs = append(vs, checkHolds(h, o)...)
	vs = append(vs, checkTokens(h)...)
	vs = append(vs, checkStarving(h, o)...)
	vs = append(vs, checkPermitHolds(h, o)...)
	vs = append(vs, checkLatches(h, o)...)
	vs = append(vs, checkMultiLocks(h, o)...)
	lin, unknown := CheckLinearizable(h, 5*time.Second)
	for _, v := range lin {
		v.Excused = excuse(h, checkLinearizable, -1, 0, h.Length)
		vs = append(vs, v)
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return cmp.Compare(a.At, b.At) })
	return vs, unknown
}

// excuse returns the first fault that limits says can
// break check and that hit client (any client when -1, and Redis always)
// between from and to; "" when none did.
func excuse(h *History, check string, client int, from, to time.Duration) FaultKind {
	for _, f := range h.Faults {
		breaks := slices.Contains(limits[f.Kind], check)
		if !breaks || f.To < from || f.From > to {
			continue
		}
		if client < 0 || f.Client < 0 || f.Client == client {
			return f.Kind
		}
	}
	return ""
}

// conflicts tells whether two holds on one name exclude each other.
func conflicts(a, b *Hold) bool {
	if a.Owner == b.Owner {
		return false // one owner's reentry, or its write lock downgraded to read
	}
	return !(a.Kind == messages.KindReadLock && b.Kind == messages.KindReadLock)
}

// checkHolds finds two owners holding one lock at once (or more permits
// than a semaphore has; a permit-expirable semaphore's are
// checkPermitHolds'). When the earlier hold ended by the engine telling
// its owner the lock was lost, the fault is that it was told too late:
// "told before" (every owner that lost a lock is told before anyone else
// acquires it).
func checkHolds(h *History, o *Options) []Violation {
	names, byName := holdsByName(h, func(hd *Hold) bool {
		return hd.End != EndUnknown && hd.Kind != messages.KindPermitSemaphore
	})
	var vs []Violation
	for _, name := range names {
		holds := byName[name]
		slices.SortStableFunc(holds, func(a, b *Hold) int { return cmp.Compare(a.From, b.From) })
		if holds[0].Kind == messages.KindSemaphore {
			vs = append(vs, checkPermits(h, name, holds, o.Permits)...)
			continue
		}
		for i, a := range holds {
			for _, b := range holds[i+1:] {
				if b.From >= a.To {
					break
				}
				if !conflicts(a, b) {
					continue
				}
				v := Violation{Check: checkExclusion, At: b.From, Name: name,
					What: fmt.Sprintf("%s (%s) held it %v..%v (%s) while %s (%s) acquired it at %v",
						a.Owner, a.Kind, a.From, a.To, a.End, b.Owner, b.Kind, b.From)}
				if a.End == EndLost {
					v.Check = checkToldBefore
					v.What = fmt.Sprintf("%s (%s) was told at %v that it lost the lock it held since %v; %s (%s) acquired it at %v",
						a.Owner, a.Kind, a.To, a.From, b.Owner, b.Kind, b.From)
				}
				// A fault on a's client from the moment its acquire was sent (a
				// clock jump then moves when its owner believes the lease
				// ends), or on b's while its acquire was in flight (a pause
				// then hands b a grant whose lease ran out meanwhile).
				v.Excused = cmp.Or(excuse(h, v.Check, a.Client, a.Asked, b.From),
					excuse(h, v.Check, b.Client, b.Asked, b.From))
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// holdsByName groups the holds keep accepts by lock name, the names
// sorted.
func holdsByName(h *History, keep func(*Hold) bool) ([]string, map[string][]*Hold) {
	byName := map[string][]*Hold{}
	var names []string
	for i := range h.Holds {
		hd := &h.Holds[i]
		if !keep(hd) {
			continue
		}
		if byName[hd.Name] == nil {
			names = append(names, hd.Name)
		}
		byName[hd.Name] = append(byName[hd.Name], hd)
	}
	slices.Sort(names)
	return names, byName
}

// edge is a change, by d, of the permits held at a moment.
type edge struct {
	at time.Duration
	d  int64
}

// sortEdges orders edges by time, releases before acquisitions at one
// instant.
func sortEdges(edges []edge) {
	slices.SortStableFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
}

// overPermits calls over with each moment the holds come to hold more
// than permits at once (from at most permits just before), and how many
// they hold then.
func overPermits(holds []*Hold, permits int64, over func(at time.Duration, held int64)) {
	edges := make([]edge, 0, 2*len(holds))
	for _, hd := range holds {
		edges = append(edges, edge{hd.From, hd.Permits}, edge{hd.To, -hd.Permits})
	}
	sortEdges(edges)
	var held int64
	for _, e := range edges {
		before := held
		held += e.d
		if held > permits && before <= permits {
			over(e.at, held)
		}
	}
}

// checkPermits finds moments a semaphore's holders held more permits than
// it has.
func checkPermits(h *History, name string, holds []*Hold, permits int64) []Violation {
	var vs []Violation
	overPermits(holds, permits, func(at time.Duration, held int64) {
		vs = append(vs, Violation{Check: checkExclusion, At: at, Name: name,
			What:    fmt.Sprintf("%d permits held at once, the semaphore has %d", held, permits),
			Excused: excuse(h, checkExclusion, -1, at-time.Minute, at)})
	})
	return vs
}

// checkTokens checks that each fenced lock's tokens grow with every new
// holding, in the order Redis granted the holdings.
func checkTokens(h *History) []Violation {
	last := map[string]*Hold{}
	var vs []Violation
	holds := make([]*Hold, 0, len(h.Holds))
	for i := range h.Holds {
		if hd := &h.Holds[i]; hd.Kind == messages.KindFencedLock && hd.End != EndUnknown {
			holds = append(holds, hd)
		}
	}
	// Redis granted a hold somewhere between its Asked and its From: hold p
	// was certainly granted before hd when p.From < hd.Asked, and hd's token
	// must then be the larger. (An answer a pause held back reaches its
	// owner late, so the order the owners learned their tokens proves
	// nothing.) Sweep the holds by Asked, keeping per name the largest token
	// of those known before it was asked.
	byFrom := slices.Clone(holds)
	slices.SortStableFunc(byFrom, func(a, b *Hold) int { return cmp.Compare(a.From, b.From) })
	slices.SortStableFunc(holds, func(a, b *Hold) int { return cmp.Compare(a.Asked, b.Asked) })
	known := 0
	for _, hd := range holds {
		for ; known < len(byFrom) && byFrom[known].From < hd.Asked; known++ {
			if p := byFrom[known]; last[p.Name] == nil || p.Token > last[p.Name].Token {
				last[p.Name] = p
			}
		}
		if p := last[hd.Name]; p != nil && hd.Token <= p.Token {
			vs = append(vs, Violation{Check: checkFencing, At: hd.From, Name: hd.Name,
				What: fmt.Sprintf("%s got token %d (asked at %v) after %s had got %d at %v", hd.Owner, hd.Token,
					hd.Asked, p.Owner, p.Token, p.From),
				Excused: excuse(h, checkFencing, -1, p.Asked, hd.From)})
		}
	}
	return vs
}

// starveBound is how long a waiter may go without the lock while it is
// free: a waiter whose wake-up message was lost looks again once the lease
// it last saw runs out.
func starveBound(o *Options) time.Duration {
	return max(o.Watchdog, o.Lease) + o.Watchdog/2
}

// spinStarveBound is how long a spin lock's waiter may go without the
// lock while it is free: it hears of no unlock, but polls at least every
// longest pause of its back-off (the workload's is the default), each poll
// a round trip, which may wait behind one other Redis call of its key
// actor; and the history sees a lock free from when its release was sent
// until the next holder's grant came back, a round trip longer than Redis
// did.
func spinStarveBound(o *Options) time.Duration {
	return messages.DefaultBackOff().Max + 8*o.trip() + 100*time.Millisecond
}

// checkStarving finds an acquire that waited (and failed, or never
// returned) through a stretch longer than starveBound (spinStarveBound
// for a spin lock) in which nobody held its lock (for a semaphore: in
// which a permit was free). A latch's await waits for its zero, not for a
// holder: checkLatches sees to it.
func checkStarving(h *History, o *Options) []Violation {
	var vs []Violation
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Action != ActAcquire || op.OK || op.Err || op.Kind == messages.KindCountDownLatch {
			continue
		}
		bound := starveBound(o)
		if op.Kind == messages.KindSpinLock {
			bound = spinStarveBound(o)
		}
		end := op.Return
		if end < 0 {
			end = h.Length
		}
		if gap, at := longestFree(h, o, op, end); gap > bound {
			what := op.Name
			if op.Kind == messages.KindGroupLock {
				what = fmt.Sprintf("%s %v", op.Name, op.Values) // free: none of its values held
			}
			vs = append(vs, Violation{Check: checkStarvation, At: at, Name: op.Name,
				What: fmt.Sprintf("%s waited %v..%v for %s (%s); it was free for %v from %v", op.Owner, op.Call,
					end, what, op.Kind, gap, at),
				// A fault on any client (the holder's, cut off) can keep a
				// waiter from a lock Redis still counts as held.
				Excused: excuse(h, checkStarvation, -1, at-2*max(o.Watchdog, o.Lease), at+gap)})
		}
	}
	return vs
}

// longestFree is the longest stretch within op's wait in which the lock op
// waited for was free (as far as Redis may know: a crashed owner's lock is
// held until its lease runs out, a permit until its lease ends, or for
// good; a hold of unknown outcome counts as held), and when it began.
func longestFree(h *History, o *Options, op *Op, end time.Duration) (time.Duration, time.Duration) {
	busy := busySpans(h, o, op.Name, op.Kind, op.Owner, func(x *Op) bool { return x.Call < op.Call })
	if op.Kind == messages.KindGroupLock {
		// Free while none of its values is held: their holds together.
		busy = nil
		for _, v := range op.Values {
			busy = append(busy, busySpans(h, o, GroupValueName(op.Name, v), op.Kind, op.Owner, nil)...)
		}
	}
	limit := int64(1)
	if op.Kind == messages.KindSemaphore || op.Kind == messages.KindPermitSemaphore {
		limit = o.Permits
	}
	return longestGap(busy, limit, op.Call, end)
}

// span is a stretch in which permits of a lock were taken.
type span struct {
	from, to time.Duration
	permits  int64
}

// busySpans lists the stretches in which owners other than owner held
// name, as a waiter for it (of kind) sees them: read holds do not keep a
// reader out, a crashed or lost owner's lock stays until its lease runs
// out, a permit until its lease ends, and a fair lock's waiter also waits,
// rightly, for the waiters ahead of it (the acquires ahead reports true
// for), until they were answered.
func busySpans(h *History, o *Options, name string, kind messages.Kind, owner string, ahead func(*Op) bool) []span {
	var busy []span
	for i := range h.Holds {
		hd := &h.Holds[i]
		if hd.Name != name || hd.Owner == owner {
			continue
		}
		if kind != messages.KindSemaphore && hd.Kind == messages.KindReadLock && kind == messages.KindReadLock {
			continue
		}
		to := hd.To
		switch {
		case hd.Kind == messages.KindPermitSemaphore:
			to = permitTaken(h, hd)
		case hd.End == EndCrashed || hd.End == EndLost:
			to += max(o.Watchdog, o.Lease)
		}
		busy = append(busy, span{hd.From, to, hd.Permits})
	}
	if kind.Fair() {
		for i := range h.Ops {
			x := &h.Ops[i]
			if x.Name == name && x.Owner != owner && x.Action == ActAcquire && ahead(x) {
				to := x.Return
				if to < 0 {
					to = h.Length
				}
				busy = append(busy, span{x.Call, to, 1})
			}
		}
	}
	return busy
}

// longestGap is the longest stretch of [from, end] in which the spans in
// busy held fewer than limit permits, and when it began.
func longestGap(busy []span, limit int64, from, end time.Duration) (time.Duration, time.Duration) {
	var edges []edge
	var held int64
	for _, s := range busy {
		switch {
		case s.to <= from || s.from >= end:
		case s.from <= from:
			held += s.permits
			edges = append(edges, edge{s.to, -s.permits})
		default:
			edges = append(edges, edge{s.from, s.permits}, edge{s.to, -s.permits})
		}
	}
	sortEdges(edges)
	var best, bestAt time.Duration
	freeSince := time.Duration(-1)
	if held < limit {
		freeSince = from
	}
	for _, e := range append(edges, edge{end, 0}) {
		at := min(e.at, end)
		if freeSince >= 0 && at-freeSince > best {
			best, bestAt = at-freeSince, freeSince
		}
		held += e.d
		switch {
		case held < limit && freeSince < 0:
			freeSince = at
		case held >= limit:
			freeSince = -1
		}
	}
	return best, bestAt
}
