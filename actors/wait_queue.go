package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// waitQueue is an actor's pending Acquires in arrival order, with their
// deadlines in a heap. Key actors and count actors both keep one.
type waitQueue struct {
	list []*waiter
	// ix is made by the first push: a name nobody waits for keeps none.
	ix *waitIndex
}

// waitIndex is what a waitQueue keeps beside its list.
type waitIndex struct {
	deadlines deadlines
	// owners counts the queued waiters of each owner, and tries the queued
	// tries: the waiters besides the head that may attempt at once (a
	// reentry, a try), found without scanning a long queue.
	owners map[string]int
	tries  int
}

// trim lets go of an empty queue's room (keyActor.trim).
func (q *waitQueue) trim() {
	if len(q.list) == 0 {
		q.list = nil
		switch {
		case q.ix == nil:
		case len(q.ix.deadlines) == 0:
			q.ix = nil
		default: // the heap still holds waiters gone from the list
			q.ix.owners = nil
		}
	}
}

// push queues a new waiter for m; a deadline already passed at now makes
// it a try: exactly one attempt, whose outcome answers it, so it never
// expires unanswered behind another attempt in flight (a Redis error must
// reach it as the error, not as a timeout).
func (q *waitQueue) push(m *messages.Acquire, sender *actor.PID, now time.Time) *waiter {
	w := &waiter{req: m, sender: sender, ready: true}
	q.list = append(q.list, w)
	if q.ix == nil {
		q.ix = &waitIndex{}
	}
	ix := q.ix
	if ix.owners == nil {
		ix.owners = map[string]int{}
	}
	ix.owners[m.Owner]++
	if !m.Deadline.IsZero() && !now.Before(m.Deadline) {
		w.try = true
		ix.tries++
		return w
	}
	ix.deadlines.add(w)
	return w
}

// find returns the index of owner's waiter with request ID reqID that was
// not cancelled yet, or -1.
func (q *waitQueue) find(owner, reqID string) int {
	for i, w := range q.list {
		if w.req.RequestID == reqID && w.req.Owner == owner && !w.cancelled {
			return i
		}
	}
	return -1
}

// removeAt takes the waiter at i out of the queue.
func (q *waitQueue) removeAt(i int) {
	q.uncount(q.list[i])
	q.list[i].gone = true
	n := len(q.list)
	copy(q.list[i:], q.list[i+1:])
	q.list[n-1] = nil // no stale pointer left in the backing array
	q.list = q.list[:n-1]
}

// remove takes w out of the queue if it is still there.
func (q *waitQueue) remove(w *waiter) {
	if i := q.indexOf(w); i >= 0 {
		q.removeAt(i)
	}
}

// wakeHead makes the head waiter due for an attempt, or, if its attempt is
// in flight, due for another one should that be refused.
func (q *waitQueue) wakeHead() {
	if len(q.list) > 0 {
		wake(q.list[0])
	}
}

// wakeAll makes every waiter due (wake).
func (q *waitQueue) wakeAll() {
	for _, w := range q.list {
		wake(w)
	}
}

// wakeChannel wakes whom a message (or a confirmed subscription, payload
// "") on channel concerns, for a key actor's kind (lio): a fair waiter
// listening on it, every waiter after a write unlock, or else the head.
func (q *waitQueue) wakeChannel(lio *lockIO, channel, payload string) {
	switch {
	case lio.wakesAll(payload):
		q.wakeAll()
	case lio.eachAttempts():
		for _, w := range q.list {
			if w.channel == channel {
				wake(w)
			}
		}
	default:
		q.wakeHead()
	}
}

// wakeRetry wakes whom a reconnect of the pub/sub concerns (messages sent
// meanwhile are lost), for a key actor's kind (lio): every waiter when
// each attempts on its own, else the head.
func (q *waitQueue) wakeRetry(lio *lockIO) {
	if lio.eachAttempts() {
		q.wakeAll()
	} else {
		q.wakeHead()
	}
}

// waiting counts the queued waiters not answered yet (WaiterCount).
func (q *waitQueue) waiting() int {
	n := 0
	for _, w := range q.list {
		if !w.cancelled {
			n++
		}
	}
	return n
}

// indexOf returns w's index, or -1.
func (q *waitQueue) indexOf(w *waiter) int {
	for i, x := range q.list {
		if x == w {
			return i
		}
	}
	return -1
}

// expire takes every waiter whose deadline passed at now (and whose
// attempt is not in flight) out of the queue and returns them.
func (q *waitQueue) expire(now time.Time) []*waiter {
	if q.ix == nil {
		return nil
	}
	expired := q.ix.deadlines.expired(now)
	if len(expired) == 0 {
		return nil
	}
	for _, w := range expired {
		q.uncount(w)
		w.gone = true
	}
	kept := q.list[:0]
	for _, w := range q.list {
		if !w.gone {
			kept = append(kept, w)
		}
	}
	clear(q.list[len(kept):])
	q.list = kept
	return expired
}

// sleepers returns the waiters that sleep on a look-again time: every
// waiter when all, else only the head (the one that waits on Redis).
func (q *waitQueue) sleepers(all bool) []*waiter {
	if all || len(q.list) == 0 {
		return q.list
	}
	return q.list[:1]
}

// wakeDue makes the sleepers whose look-again time came at now due for an
// attempt.
func (q *waitQueue) wakeDue(now time.Time, all bool) {
	for _, w := range q.sleepers(all) {
		if !w.ready && !w.inflight && !now.Before(w.wakeAt) {
			w.ready = true
		}
	}
}

// next returns the earliest time the queue needs its actor's timer: a
// deadline or a sleeper's look-again time (the zero time if none).
func (q *waitQueue) next(all bool) time.Time {
	var next time.Time
	if q.ix != nil {
		next = q.ix.deadlines.next()
	}
	for _, w := range q.sleepers(all) {
		if !w.inflight && !w.cancelled && !w.ready && !w.wakeAt.IsZero() &&
			(next.IsZero() || w.wakeAt.Before(next)) {
			next = w.wakeAt
		}
	}
	return next
}

// reset forgets every waiter.
func (q *waitQueue) reset() {
	q.list, q.ix = nil, nil
}

// uncount takes w out of the counts as it leaves the queue.
func (q *waitQueue) uncount(w *waiter) {
	ix := q.ix
	if ix.owners[w.req.Owner]--; ix.owners[w.req.Owner] <= 0 {
		delete(ix.owners, w.req.Owner)
	}
	if w.try {
		ix.tries--
	}
}

// waits tells whether owner has a waiter queued.
func (q *waitQueue) waits(owner string) bool {
	return q.ix != nil && q.ix.owners[owner] > 0
}

// beyondHead tells whether a waiter other than the head may attempt at
// once: a try, or a reentry (its owner holds, in holders).
func (q *waitQueue) beyondHead(holders map[string]*holding) bool {
	if q.ix == nil {
		return false
	}
	if q.ix.tries > 0 {
		return true
	}
	for owner := range holders {
		if q.ix.owners[owner] > 0 {
			return true
		}
	}
	return false
}

// waiter is one pending Acquire, of a key actor or a count actor.
//
// Its life, in the four states its flags make (try and cancelled mark a
// waiter in any state but gone):
//
//	state      flags
//	due        ready, !inflight
//	in flight  inflight (ready or not; woken once a wake-up came meanwhile)
//	asleep     !ready, !inflight, refused, wakeAt set
//	gone       gone (out of the queue; the deadlines heap drops it)
//
//	from       event                                          to
//	(push)     queued                                         due (a try if its deadline had passed)
//	due        pump: start, or a handoff (lockIO.handoff)      in flight
//	due        pump: the head, held by another owner here      asleep
//	asleep     wake, wakeDue (its wakeAt came)                 due
//	asleep     a handoff's acquire for it                      in flight
//	in flight  wake                                            in flight, woken
//	in flight  refused, woken                                  due (woken cleared)
//	in flight  refused                                         asleep (refused from then on)
//	in flight  refused as a try or past its deadline           gone
//	in flight  acquired, failed, already held, lost            gone
//	in flight  Cancel, Closing, a latch's zero                 in flight, cancelled (answered now)
//	due/asleep Cancel, Closing, its deadline (expire)          gone (answered now)
//	due/asleep a latch's zero (count actor)                    gone (answered now)
//
// So the legal combinations are: woken only with inflight (cleared when
// the refusal is read); inflight with ready or not (a handoff's attempt
// may be a sleeper's); !ready && !inflight only asleep, with refused and
// a wakeAt (a count actor's sleeper too); cancelled, once answered, only
// while the attempt is in flight, or for the moment before the waiter is
// taken out; try never asleep (its one attempt answers it); refused never
// cleared (a fair waiter then has a place in Redis's queue to give up,
// keyActor.leave); gone last, set when the waiter leaves the queue.
type waiter struct {
	req    *messages.Acquire
	sender *actor.PID
	// try marks a request whose deadline had passed on arrival: exactly one
	// attempt, which may run ahead of the queue.
	try bool
	// ready marks a waiter due for an attempt; a refused waiter is not ready
	// until woken (unlock message, subscription, timer, local release).
	ready bool
	// wakeAt is when a refused head waiter retries anyway: the holder's PTTL.
	wakeAt time.Time
	// inflight marks the waiter whose attempt is the request in flight.
	inflight bool
	// woken records a wake-up (unlock message, subscription, reconnect,
	// local release) that came while the waiter's attempt was in flight:
	// the attempt may have read the lock before it was freed, so a refusal
	// is retried at once instead of sleeping on a stale PTTL.
	woken bool
	// refused marks a waiter refused at least once: it listens on its
	// channel from then on, and a fair waiter has a place in Redis's queue
	// to give up when it leaves.
	refused bool
	// cancelled marks a waiter already answered: because of Cancel, or by
	// its latch's zero message while its read was in flight. The answer
	// of a request in flight for it is then dropped.
	cancelled bool
	// gone marks a waiter that left the queue (for the deadlines heap).
	gone bool
	// permitIDs are the permits a permit-expirable semaphore waiter asks
	// for, one or more.
	permitIDs []string
	// channel is what a refused waiter listens on (set with refused).
	channel string
	// poll is a spin lock waiter's back-off (lockIO.polls).
	poll spinPoll
}

func wake(w *waiter) {
	if w.inflight {
		w.woken = true
	} else {
		w.ready = true
	}
}
