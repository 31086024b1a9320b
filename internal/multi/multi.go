// Package multi holds a MultiLock's decisions, apart from the code that
// acts on them: the canonical order of the members, each member's deadline
// when the members are taken in turn, whether an attempt holds the set,
// what it gives back, and when and after what pause the set is tried
// again. It has no goroutines, reads no clock, talks to no Redis and draws
// no random numbers of its own: the caller passes the time and the random
// draws in.
//
// Two drivers act on these decisions: package client's MultiLock, with its
// blocking Lock calls, and the simulation's workload (package sim), with
// the engine's messages. One acquire goes:
//
//  1. Sort the members once (Sorted).
//  2. An attempt starts (Attempt.Start) and asks for the members in order,
//     member i with the deadline and wait Plan.Member gives. It stops at
//     the first member refused (its wait ran out); Attempt.Taken counts
//     the members it took, Attempt.Lost records a member's loss told
//     meanwhile.
//  3. Plan.Outcome says whether the attempt holds the set and how many of
//     its first members to give back (all it took, when it does not).
//  4. When it does not, the caller gives them back, and tries again after
//     Pause while Again allows (a blocking acquire always, until its
//     caller gives up).
//
// A member answered with an error (Redis unreachable, an unknown outcome)
// ends the acquire with that error: the members taken are given back and
// nothing is tried again. One error does not (Plan.MemberLost): a member
// whose earlier holding by the same owner ran out while the attempt's
// reentry of it was in flight, when the acquire does not reenter a live
// holding of the set. That holding is over (its owner was told, and the
// engine gives back what the reentry took), so the member is asked again
// at once, which takes it afresh; should that answer the same, the attempt
// counts as one during which a member was lost: given back and tried
// again.
package multi

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/warden-go/warden/messages"
)

// MemberWait bounds how long an attempt holding some members waits for the
// next one before it gives them back and starts again.
const MemberWait = 1500 * time.Millisecond

// RetryPause bounds the random pause before the members are tried again.
const RetryPause = 50 * time.Millisecond

// Member is what the canonical order reads of a member: its lock's name
// and the Redis server its client talks to ("" when it has no stable
// address).
type Member struct {
	Name   string
	Server string
}

// Sorted returns members in the canonical order, by name then server,
// members with equal keys kept in the given order. MultiLocks that share
// members take them in this order whatever order they were given in, so
// two of them never hold one each of two members the other wants.
func Sorted[T any](members []T, key func(T) Member) []T {
	type keyed struct {
		m T
		k Member
	}
	ks := make([]keyed, len(members))
	for i, m := range members {
		ks[i] = keyed{m, key(m)}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(strings.Compare(a.k.Name, b.k.Name), strings.Compare(a.k.Server, b.k.Server))
	})
	out := make([]T, len(ks))
	for i, k := range ks {
		out[i] = k.m
	}
	return out
}

// Plan is one acquire of a set of N members.
type Plan struct {
	N int
	// Deadline ends the acquire's wait; zero for a blocking acquire, which
	// waits until its caller gives up.
	Deadline time.Time
	// Lease is every member's lease; 0 is watchdog mode.
	Lease time.Duration
	// Reentry records that the acquire reenters a holding of the set that
	// was not lost: a member's loss (MemberLost) then ends it, as a
	// reentry of a lost holding does.
	Reentry bool
}

// Blocking reports whether the acquire has no deadline of its own.
func (p Plan) Blocking() bool { return p.Deadline.IsZero() }

// Member returns the deadline of member i (in canonical order) asked for
// at now, zero for none, and the wait a fair lock member keeps its place
// in the queue for (0 for none: the lock's default). The first member
// waits as long as the acquire may (with no deadline, until its caller
// gives up); a later one at most MemberWait, never past the deadline.
func (p Plan) Member(i int, now time.Time) (deadline time.Time, wait time.Duration) {
	switch {
	case p.Blocking() && i == 0:
		return time.Time{}, 0
	case p.Blocking():
		deadline = now.Add(MemberWait)
	case i == 0:
		deadline = p.Deadline
	default:
		deadline = now.Add(MemberWait)
		if p.Deadline.Before(deadline) {
			deadline = p.Deadline
		}
	}
	return deadline, max(0, deadline.Sub(now))
}

// Attempt is one pass over the members, as its driver saw it.
type Attempt struct {
	// Start is when the attempt asked for its first member.
	Start time.Time
	// Taken is how many members, in canonical order, it took.
	Taken int
	// Lost records that a member it took was told lost before it ended.
	Lost bool
}

// Outcome decides, for attempt a ended at now, whether it holds the set,
// and how many of its first members to give back: none when it holds the
// set, else every member it took. It holds the set when it took every
// member, none of them was lost meanwhile, and, with a fixed lease, less
// than the lease has passed since it began: the first member's lease ran
// from then, so a set whose first member's lease ran out while later ones
// were awaited is given back.
func (p Plan) Outcome(a Attempt, now time.Time) (held bool, giveBack int) {
	held = a.Taken == p.N && !a.Lost && (p.Lease == 0 || now.Sub(a.Start) < p.Lease)
	if held {
		return true, 0
	}
	return false, a.Taken
}

// Again reports whether an acquire whose attempt failed at now tries
// again: always without a deadline (zero; its caller decides when to give
// up), else until the deadline has passed.
func Again(deadline, now time.Time) bool {
	return deadline.IsZero() || now.Before(deadline)
}

// Pause is how long to wait, at now, before the next attempt: from 1 ms up
// to (not including) RetryPause, spread evenly by r (a uniformly drawn
// number), but never past deadline (zero: none).
func Pause(deadline, now time.Time, r uint64) time.Duration {
	d := time.Millisecond + time.Duration(r%uint64(RetryPause-time.Millisecond))
	if !deadline.IsZero() {
		d = min(d, max(0, deadline.Sub(now)))
	}
	return d
}

// MemberLost reports whether err, a member acquire's answer, says that the
// owner's earlier holding of the member was lost while the acquire (a
// reentry of it) was in flight: the member is asked again at once, and
// if that answers the same, the attempt is one during which a member was
// lost (Attempt.Lost), not a failed acquire. It is not when the acquire
// reenters a holding of the set that was not lost (Plan.Reentry): that
// holding is what was lost, and the acquire fails as a lost reentry of
// one lock does. A closed client's loss never is: its acquires end.
func (p Plan) MemberLost(err error) bool {
	return !p.Reentry && errors.Is(err, messages.ErrLockLost) && !errors.Is(err, messages.ErrClosed)
}
