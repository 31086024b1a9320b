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
// not in flight and not cancelled (the zero time if none). The waiters it
// looks past (their attempt's answer decides) go back on the heap: a past
// deadline of theirs would make the timer fire again at once, over and
// over, until the answer came.
func (d *deadlines) next() time.Time {
	var buf [4]*waiter
	aside := buf[:0]
	var next time.Time
	for {
		d.dropGone()
		if len(*d) == 0 {
			break
		}
		if top := (*d)[0]; !top.inflight && !top.cancelled {
			next = top.req.Deadline
			break
		}
		aside = append(aside, heap.Pop(d).(*waiter))
	}
	for _, w := range aside {
		heap.Push(d, w)
	}
	return next
}

// expired removes from the heap, and returns, every queued waiter not in
// flight whose deadline is at or before now.
func (d *deadlines) expired(now time.Time) []*waiter {
	var out, aside []*waiter
	for {
		d.dropGone()
		if len(*d) == 0 || (*d)[0].req.Deadline.After(now) {
			break
		}
		w := heap.Pop(d).(*waiter)
		if w.inflight || w.cancelled {
			aside = append(aside, w) // its attempt's answer decides
			continue
		}
		out = append(out, w)
	}
	for _, w := range aside {
		heap.Push(d, w)
	}
	return out
}

func (d *deadlines) dropGone() {
	for len(*d) > 0 && (*d)[0].gone {
		heap.Pop(d)
	}
}
