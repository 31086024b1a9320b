package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/warden-go/warden/internal/multi"
)

// The checks of the MultiLocks. Their members' operations and holds are
// ordinary ones, which every other check covers (exclusion, told-before,
// starvation and linearizability per name); these check the sets.
const (
	// checkAllOrNone: a MultiLock acquire answered held while its owner did
	// not hold every member, its owner let a member go while it held the
	// set, or it still held a member once a failed acquire, or the set's
	// release, was answered.
	checkAllOrNone = "all or none"
	// checkMultiProgress: a MultiLock acquire went unanswered, or failed,
	// through a stretch longer than multiBound in which no other owner held
	// any of its members: MultiLocks that share members must not block
	// each other for good (a deadlock), nor take turns refusing each other
	// (a livelock).
	checkMultiProgress = "multilock progress"
)

// multiBound is how long a MultiLock may wait while all its members are
// free: a member's waiter whose wake-up message was lost looks again once
// the lease it last saw runs out (starveBound), and between attempts the
// MultiLock pauses up to multi.RetryPause.
func multiBound(o *Options) time.Duration { return starveBound(o) + multi.RetryPause }

// checkMultiLocks checks every MultiLock acquire of h:
//
//   - Held means all held. At an acquire answered held (Return), its owner
//     holds every member (a hold of its own on that name, From <= Return <
//     To, or To == Return for a hold told lost at that instant: the owner
//     handles one message at a time, and a loss handled before the last
//     member's grant fails the attempt, so one told at the same instant
//     came after the answer), and none of those holds ends released before
//     the owner began releasing the set (Until); one may end lost (its
//     owner was told), crashed or with the run.
//   - None held after. Once a failed acquire was answered (the members it
//     took were given back and those give-backs answered before), or once
//     every release of the set was answered (Done), its owner holds none of
//     the members.
//   - Progress (checkMultiProgress). An acquire not answered held, nor
//     with an error, went no longer than multiBound without any of its
//     members held by another owner (a member that is a fair lock is also
//     busy while another owner waits for it).
//
// A hold of unknown outcome (EndUnknown, after an error) is no owner's
// belief and counts for neither of the first two; for progress it counts
// as held. No fault excuses the first two: they compare what the owner was
// told, member by member, with what the MultiLock answered. Progress is
// excused as starvation is (see Limits).
func checkMultiLocks(h *History, o *Options) []Violation {
	var vs []Violation
	for i := range h.Multis {
		m := &h.Multis[i]
		vs = append(vs, checkSetHeld(h, m)...)
		vs = append(vs, checkSetGivenBack(h, m)...)
		if v := checkSetProgress(h, o, m); v != nil {
			vs = append(vs, *v)
		}
	}
	return vs
}

// ownerHold is owner's hold on member mm at at (From <= at < To; with
// lostThen, also one told lost at at), nil when it held none then.
func ownerHold(h *History, owner string, mm MultiMember, at time.Duration, lostThen bool) *Hold {
	for i := range h.Holds {
		hd := &h.Holds[i]
		if hd.Owner != owner || hd.Name != mm.Name || hd.Kind != mm.Kind || hd.End == EndUnknown || hd.From > at {
			continue
		}
		if at < hd.To || (lostThen && hd.End == EndLost && hd.To == at) {
			return hd
		}
	}
	return nil
}

// describe names m for a report.
func (m *MultiOp) describe() string {
	names := make([]string, len(m.Members))
	for i, mm := range m.Members {
		names[i] = mm.Name
	}
	return fmt.Sprintf("%s's MultiLock over %s (called at %v)", m.Owner, strings.Join(names, ", "), m.Call)
}

// checkSetHeld checks an acquire answered held: every member held then,
// none let go before the set's release.
func checkSetHeld(h *History, m *MultiOp) []Violation {
	if !m.OK || m.Return < 0 {
		return nil
	}
	var vs []Violation
	for _, mm := range m.Members {
		hd := ownerHold(h, m.Owner, mm, m.Return, true)
		switch {
		case hd == nil:
			vs = append(vs, Violation{Check: checkAllOrNone, At: m.Return, Name: mm.Name,
				What: fmt.Sprintf("%s was answered held at %v, but its owner held no hold of %s (%s) then",
					m.describe(), m.Return, mm.Name, mm.Kind)})
		case hd.End == EndReleased && (m.Until < 0 || hd.To < m.Until):
			until := "it never released the set"
			if m.Until >= 0 {
				until = fmt.Sprintf("it began releasing the set at %v", m.Until)
			}
			vs = append(vs, Violation{Check: checkAllOrNone, At: hd.To, Name: mm.Name,
				What: fmt.Sprintf("%s was answered held at %v; its owner released %s at %v while it held the set (%s)",
					m.describe(), m.Return, mm.Name, hd.To, until)})
		}
	}
	return vs
}

// checkSetGivenBack checks that the owner holds none of the members once a
// failed acquire, or the set's release, was answered.
func checkSetGivenBack(h *History, m *MultiOp) []Violation {
	at, what := m.Done, "its release was answered"
	if !m.OK {
		at, what = m.Return, "it was answered not held"
	}
	if at < 0 {
		return nil
	}
	var vs []Violation
	for _, mm := range m.Members {
		if hd := ownerHold(h, m.Owner, mm, at, false); hd != nil {
			vs = append(vs, Violation{Check: checkAllOrNone, At: at, Name: mm.Name,
				What: fmt.Sprintf("%s: %s at %v, but its owner still held %s (%s), since %v", m.describe(), what, at,
					mm.Name, mm.Kind, hd.From)})
		}
	}
	return vs
}

// checkSetProgress finds an acquire that went without its set longer than
// multiBound while none of its members was held by another owner.
func checkSetProgress(h *History, o *Options, m *MultiOp) *Violation {
	if m.OK || m.Err {
		return nil
	}
	end := m.Return
	if end < 0 {
		end = h.Length
		for _, f := range h.Faults {
			if f.Kind == FaultCrash && f.Client == m.Client {
				end = min(end, f.From) // it waited no more
			}
		}
	}
	var busy []span
	for _, mm := range m.Members {
		// A fair member's waiters: any that waited while the MultiLock did
		// may have been ahead of one of its attempts.
		busy = append(busy, busySpans(h, o, mm.Name, mm.Kind, m.Owner, func(x *Op) bool { return x.Call < end })...)
	}
	gap, at := longestGap(busy, 1, m.Call, end)
	if gap <= multiBound(o) {
		return nil
	}
	answer := "never answered"
	if m.Return >= 0 {
		answer = fmt.Sprintf("answered not held at %v after %d attempts", m.Return, m.Attempts)
	}
	return &Violation{Check: checkMultiProgress, At: at, Name: m.Members[0].Name,
		What: fmt.Sprintf("%s was %s; no other owner held any of its members for %v from %v", m.describe(), answer,
			gap, at),
		Excused: excuse(h, checkMultiProgress, -1, at-2*max(o.Watchdog, o.Lease), at+gap)}
}
