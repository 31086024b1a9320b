package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// The checks of the counting kinds that nobody holds in Redis's eyes: the
// permit-expirable semaphore and the count-down latch.
const (
	// checkPermitCount: a permit-expirable semaphore's permits were held by more
	// owners at once than it has, or a permit was gone before its lease
	// could have ended.
	checkPermitCount = "permits"
	// checkLatch: a latch's await was answered "reached zero" before enough
	// count-downs were sent to bring it there, or a try answered "not yet"
	// after the latch certainly reached zero.
	checkLatch = "latch"
)

// permitTaken is until when Redis may count hd's permit as taken, as a
// waiter sees it: until its release was sent, else until its lease ended
// (the acquire's script ran before hd.From, so its lease ends by
// From+Lease); for good when it never expires.
func permitTaken(h *History, hd *Hold) time.Duration {
	switch {
	case hd.End == EndReleased || hd.End == EndUnknown:
		return hd.To
	case hd.Lease == 0:
		return max(h.Length, hd.To)
	}
	return max(hd.From+hd.Lease, hd.To)
}

// checkPermitHolds checks the permit-expirable semaphores:
//
//   - At no moment do more owners hold permits of one than it has. An
//     owner holds its permit from the grant's answer until it sent the
//     release or, whichever came first, the lease ended: nobody tells it,
//     so it counts the lease from when it sent the acquire, a permitGrain
//     early (Hold.leaseEnd). A hold of unknown outcome (EndUnknown) is no
//     owner's belief and does not count.
//   - A release answered "not held" (not an error) that Redis ran before
//     the permit's lease could end (it returned before leaseEnd; a permit
//     without a lease never ends) found the permit gone early.
//
// A restart or a clock jump at any moment before excuses either (see
// Limits): a permit taken before a restart is still held by its
// owner after it, for good if it never expires.
func checkPermitHolds(h *History, o *Options) []Violation {
	names, byName := holdsByName(h, func(hd *Hold) bool {
		return hd.Kind == messages.KindPermitSemaphore && hd.End != EndUnknown && hd.To > hd.From
	})
	var vs []Violation
	for _, name := range names {
		holds := byName[name]
		overPermits(holds, o.Permits, func(at time.Duration, held int64) {
			vs = append(vs, Violation{Check: checkPermitCount, At: at, Name: name,
				What: fmt.Sprintf("%d permits held at once (%s), the semaphore has %d", held,
					permitHolders(holds, at), o.Permits),
				Excused: excuse(h, checkPermitCount, -1, 0, at)})
		})
	}
	return append(vs, checkPermitReleases(h)...)
}

// permitHolders lists who held a permit at at.
func permitHolders(holds []*Hold, at time.Duration) string {
	s := ""
	for _, hd := range holds {
		if hd.From <= at && at < hd.To {
			if s != "" {
				s += ", "
			}
			lease := "no lease"
			if hd.Lease > 0 {
				lease = fmt.Sprintf("lease %v", hd.Lease)
			}
			s += fmt.Sprintf("%s %v..%v %s", hd.Owner, hd.From, hd.To, lease)
		}
	}
	return s
}

// checkPermitReleases finds a permit's release answered "not held" that
// Redis ran while the permit's lease still ran. An owner acquires, holds
// and releases one permit at a time, so a hold's release is its owner's
// first on that name sent at or after the hold began.
func checkPermitReleases(h *History) []Violation {
	type ownerName struct{ owner, name string }
	releases := map[ownerName][]*Op{}
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Kind == messages.KindPermitSemaphore && op.Action == ActRelease {
			k := ownerName{op.Owner, op.Name}
			releases[k] = append(releases[k], op)
		}
	}
	var vs []Violation
	for i := range h.Holds {
		hd := &h.Holds[i]
		if hd.Kind != messages.KindPermitSemaphore || hd.End == EndUnknown {
			continue
		}
		rs := releases[ownerName{hd.Owner, hd.Name}]
		j := slices.IndexFunc(rs, func(op *Op) bool { return op.Call >= hd.From })
		if j < 0 {
			continue
		}
		rel := rs[j]
		if rel.Return < 0 || rel.Err || rel.OK || (hd.Lease > 0 && rel.Return >= hd.leaseEnd()) {
			continue
		}
		vs = append(vs, Violation{Check: checkPermitCount, At: rel.Return, Name: hd.Name,
			What: fmt.Sprintf("%s's release (sent at %v) of the permit it acquired at %v (asked at %v, lease %v) was answered at %v: not held",
				hd.Owner, rel.Call, hd.From, hd.Asked, hd.Lease, rel.Return),
			Excused: excuse(h, checkPermitCount, -1, 0, rel.Return)})
	}
	return vs
}

// latchBound is how long an await may go unanswered once its latch is
// certainly at zero: a waiter whose wake-up message was lost reads the
// count again Watchdog/3 after its last read, and those behind it follow
// at once; Watchdog/2 leaves room for the network's trips.
func latchBound(o *Options) time.Duration { return o.Watchdog / 2 }

// latchHistory is one latch name's operations, each kind by its call.
type latchHistory struct {
	sets, downs, awaits []*Op
}

// checkLatches checks each count-down latch's awaits against its sets and
// count-downs. A set S is the latch's count set by ActSetCount (Client -1,
// at the run's start and after a restart); an await A is checked against
// the latest set S certainly applied before A was sent (S.Return <
// A.Call):
//
//   - Reached zero (checkLatch). A answered "reached zero" (OK) only if at
//     least S's count of count-downs may have been applied after S and
//     before A's answer: those sent before A's answer (Call < A.Return)
//     other than those answered, without error, before S was sent (those
//     ran on an earlier latch). A count-down answered with an error, or
//     never answered, may or may not have run: it counts as run, so the
//     check holds whatever a lost request or reply did.
//   - Zero reached, Z. The latch is certainly at zero (deleted) from the
//     answer of the first count-down sent after S certainly applied
//     (Call > S.Return) that answered 0 without error, and answered before
//     the next set was sent. Only a set (a restart) brings it back.
//   - Not yet after zero (checkLatch). A try sent after Z answered "not
//     yet" (ErrTimeout, not an error of the system): its one read found a
//     count the latch no longer had.
//   - Waiting after zero (checkStarvation). A waiting await (not a try,
//     not answered with an error) stayed unanswered, or was answered (late
//     or "not yet"), more than latchBound after max(A.Call, Z). A's
//     client's engine runs one read of a latch at a time, and a read whose
//     request or reply is lost holds the others up until its call gives up
//     (redisio.IOTimeout after it was sent), even once the zero message
//     answered its own waiter: A's wait is counted from then, for each
//     lost read (a lost GET) of A's client before A's end and each await
//     of the same client and name answered with an error. A fault on A's
//     client (or Redis) during A's wait excuses it, as Limits says for
//     starvation.
func checkLatches(h *History, o *Options) []Violation {
	byName := map[string]*latchHistory{}
	var names []string
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != messages.KindCountDownLatch {
			continue
		}
		lh := byName[op.Name]
		if lh == nil {
			lh = &latchHistory{}
			byName[op.Name] = lh
			names = append(names, op.Name)
		}
		switch op.Action {
		case ActSetCount:
			if op.OK {
				lh.sets = append(lh.sets, op)
			}
		case ActCountDown:
			lh.downs = append(lh.downs, op)
		case ActAcquire, ActTry:
			lh.awaits = append(lh.awaits, op)
		}
	}
	slices.Sort(names)
	var vs []Violation
	for _, name := range names {
		lh := byName[name]
		byCall := func(a, b *Op) int { return cmp.Compare(a.Call, b.Call) }
		slices.SortStableFunc(lh.sets, byCall)
		slices.SortStableFunc(lh.downs, byCall)
		slices.SortStableFunc(lh.awaits, byCall)
		for _, a := range lh.awaits {
			s := slices.IndexFunc(lh.sets, func(set *Op) bool { return set.Return >= a.Call }) - 1
			if s == -2 {
				s = len(lh.sets) - 1
			}
			if s < 0 {
				continue // no count set yet: the latch is missing, at zero
			}
			vs = append(vs, lh.checkAwait(h, o, a, s)...)
		}
	}
	return vs
}

// checkAwait checks await a against set number s (see checkLatches).
func (lh *latchHistory) checkAwait(h *History, o *Options, a *Op, s int) []Violation {
	set := lh.sets[s]
	if a.OK {
		n := int64(0)
		for _, d := range lh.downs {
			before := d.Return >= 0 && !d.Err && d.Return < set.Call
			if d.Call < a.Return && !before {
				n++
			}
		}
		if n < set.Permits {
			return []Violation{{Check: checkLatch, At: a.Return, Name: a.Name,
				What: fmt.Sprintf("%s's await (sent at %v) was answered at %v: reached zero; only %d count-downs could have run since the count was set to %d at %v",
					a.Owner, a.Call, a.Return, n, set.Permits, set.Call),
				Excused: excuse(h, checkLatch, -1, set.Call, a.Return)}}
		}
	}
	zero := lh.zeroAt(s)
	if zero < 0 || a.Err {
		return nil
	}
	if a.Action == ActTry {
		if a.OK || a.Return < 0 || a.Call <= zero {
			return nil
		}
		return []Violation{{Check: checkLatch, At: a.Return, Name: a.Name,
			What: fmt.Sprintf("%s's try (sent at %v) was answered at %v: not yet; the latch was at zero from %v",
				a.Owner, a.Call, a.Return, zero),
			Excused: excuse(h, checkLatch, -1, set.Call, a.Return)}}
	}
	end := a.Return
	if end < 0 {
		end = h.Length
	}
	from := max(a.Call, zero)
	for _, b := range lh.awaits {
		if b != a && b.Err && b.Client == a.Client && b.Call < end && b.Return > from {
			from = max(from, b.Return)
		}
	}
	for _, f := range h.Faults {
		lost := f.Kind == FaultLostRequest || f.Kind == FaultLostReply
		if lost && f.Client == a.Client && f.Detail == "get" && f.From < end && f.From+redisio.IOTimeout > from {
			from = f.From + redisio.IOTimeout
		}
	}
	if end-from <= latchBound(o) {
		return nil
	}
	answer := "never answered"
	switch {
	case a.Return >= 0 && a.OK:
		answer = fmt.Sprintf("answered at %v", a.Return)
	case a.Return >= 0:
		answer = fmt.Sprintf("answered not yet at %v", a.Return)
	}
	return []Violation{{Check: checkStarvation, At: from, Name: a.Name,
		What: fmt.Sprintf("%s's await (sent at %v) was %s; the latch was at zero from %v, it waited %v since %v",
			a.Owner, a.Call, answer, zero, end-from, from),
		Excused: excuse(h, checkStarvation, a.Client, a.Call, end)}}
}

// zeroAt is when set number s's latch was certainly at zero (see
// checkLatches), -1 when it never certainly was.
func (lh *latchHistory) zeroAt(s int) time.Duration {
	set := lh.sets[s]
	next := time.Duration(-1)
	if s+1 < len(lh.sets) {
		next = lh.sets[s+1].Call
	}
	zero := time.Duration(-1)
	for _, d := range lh.downs {
		if d.Call <= set.Return || d.Return < 0 || d.Err || d.Token != 0 || (next >= 0 && d.Return >= next) {
			continue
		}
		if zero < 0 || d.Return < zero {
			zero = d.Return
		}
	}
	return zero
}
