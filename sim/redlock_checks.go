package sim

import (
	"fmt"
	"slices"
	"time"
)

// The RedLock checks.
const (
	// checkRedLockExclusion: no two owners' holdings of one name overlap,
	// each from its grant (as its owner decided it) to the earliest of its
	// release, its validity's end and its learning that it was lost.
	checkRedLockExclusion = "redlock exclusion"
	// checkRedLockBelief: no owner goes on believing it holds a RedLock
	// long after fewer than a majority of the masters hold it for it,
	// without being told (see beliefSlack).
	checkRedLockBelief = "redlock belief"
)

// redLockLimits names, for each fault that can break a RedLock guarantee,
// the checks it breaks, and why; any other violation is a defect.
//   - restart: a master that restarts without its data (and without
//     waiting a lease before it serves again, the algorithm's delayed
//     restart) grants a name it had granted to another owner, so a second
//     majority forms while the first owner still holds: the known limit of
//     RedLock. A restart also drops a watchdog holding's member unseen until
//     the next renewal, within beliefSlack.
//   - pause: a process frozen longer than the validity holds on (a fixed
//     lease's validity timer fires only when it wakes; a watchdog
//     holding's loss is told only then) while its members expire and
//     another owner takes them.
//   - clock-jump: a process whose clock jumps measures the validity, its
//     renewals and its members' lease ends wrong.
var redLockLimits = map[FaultKind][]string{
	FaultRestart:   {checkRedLockExclusion},
	FaultPause:     {checkRedLockExclusion, checkRedLockBelief},
	FaultClockJump: {checkRedLockExclusion, checkRedLockBelief},
}

// checkRedLock runs the RedLock checks over a run's holdings.
func checkRedLock(res *RedLockResult, o *RedLockOptions, believed []believed) []Violation {
	var out []Violation
	longest := max(o.Watchdog, o.Lease)
	for i, a := range res.Holds {
		for _, b := range res.Holds[i+1:] {
			if a.Name != b.Name || a.Owner == b.Owner || a.From >= b.To || b.From >= a.To {
				continue
			}
			first, second := a, b
			if second.From < first.From {
				first, second = second, first
			}
			v := Violation{Check: checkRedLockExclusion, At: second.From, Name: a.Name,
				What: fmt.Sprintf("%s held %v..%v (%s, %d masters), %s held %v..%v (%s, %d masters)", first.Owner,
					first.From, first.To, first.End, first.Taken, second.Owner, second.From, second.To, second.End,
					second.Taken)}
			// The faults that may explain it: from a lease before the first
			// attempt to the second grant.
			v.Excused = redLockExcuse(res.Faults, checkRedLockExclusion, first.Asked-longest, second.From,
				first.Process, second.Process)
			out = append(out, v)
		}
	}
	slack := beliefSlack(o)
	reported := map[int]bool{}
	for _, b := range believed {
		if reported[b.hold] || b.at-b.since <= slack {
			continue
		}
		reported[b.hold] = true
		h := res.Holds[b.hold]
		v := Violation{Check: checkRedLockBelief, At: b.at, Name: h.Name,
			What: fmt.Sprintf("%s still held at %v (from %v), but fewer than a majority of the masters held it since %v",
				h.Owner, b.at, h.From, b.since)}
		v.Excused = redLockExcuse(res.Faults, checkRedLockBelief, h.Asked-longest, b.at, h.Process, h.Process)
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return int(a.At - b.At) })
	return out
}

// beliefSlack is how long an owner may take to learn that its majority is
// gone: a watchdog lease (an engine tells a member's loss by its lease's
// end, or at the renewal that finds it gone; a fixed lease's validity ends
// within its lease), a round trip, and the probe's period.
func beliefSlack(o *RedLockOptions) time.Duration {
	trip := o.Latency
	if slices.Contains(o.Faults, FaultLatency) {
		trip = o.MaxLatency
	}
	return max(o.Watchdog, o.Lease) + 2*trip + probeEvery
}

// redLockExcuse returns the first fault redLockLimits says can break check
// that hit within [from, to]: a restart of any master, a pause or clock
// jump of one of the processes p and q (a pause counts while it lasts).
func redLockExcuse(faults []RedLockFault, check string, from, to time.Duration, p, q int) FaultKind {
	for _, f := range faults {
		if !slices.Contains(redLockLimits[f.Kind], check) || f.From > to || f.To < from {
			continue
		}
		if f.Kind != FaultRestart && f.Process != p && f.Process != q {
			continue
		}
		return f.Kind
	}
	return ""
}
