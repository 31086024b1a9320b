package actors

import (
	"container/heap"
	"time"
)

// deadlines orders a key actor's waiters that have a deadline, earliest
// first, so the next deadline is found without scanning the queue. A
// waiter that left the queue (gone) stays in the heap until it reaches the
// top, where it is dropped.
type deadlines []*waiter

var _ heap.Interface = (*deadlines)(nil)

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].req.Deadline.Before(d[j].req.Deadline) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(*waiter)) }

func (d *deadlines) Pop() any {
	old := *d
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	return w
}

// add tracks w if it has a deadline.
func (d *deadlines) add(w *waiter) {
	if !w.req.Deadline.IsZero() {
		heap.Push(d, w)
	}
}

// next returns the earliest deadline of a waiter that is still queued,
// not in flight and not cancelled (the zero time if none).
func (d *deadlines) next() time.Time {
	var next time.Time
	d.walk(func(w *waiter) bool {
		next = w.req.Deadline
		return false
	})
	return next
}

// expired removes from the heap, and returns, every queued waiter not in
// flight whose deadline is at or before now.
func (d *deadlines) expired(now time.Time) []*waiter {
	var out []*waiter
	d.walk(func(w *waiter) bool {
		if w.req.Deadline.After(now) {
			return false
		}
		out = append(out, w)
		return true
	})
	return out
}

// walk offers take, earliest deadline first, the queued waiters whose
// deadline is theirs to act on (not in flight, not cancelled): each one
// take accepts leaves the heap, and the first one it refuses ends the walk.
// The waiters it looks past (their attempt's answer decides) go back on
// the heap: a past deadline of theirs would make the timer fire again at
// once, over and over, until the answer came.
func (d *deadlines) walk(take func(*waiter) bool) {
	var buf [4]*waiter
	aside := buf[:0]
	for {
		d.dropGone()
		if len(*d) == 0 {
			break
		}
		w := (*d)[0]
		settled := !w.inflight && !w.cancelled
		if settled && !take(w) {
			break
		}
		heap.Pop(d)
		if !settled {
			aside = append(aside, w)
		}
	}
	for _, w := range aside {
		heap.Push(d, w)
	}
}

func (d *deadlines) dropGone() {
	for len(*d) > 0 && (*d)[0].gone {
		heap.Pop(d)
	}
}
