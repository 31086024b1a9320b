package wardentest

import (
	"container/heap"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// fakeClock is the kit's clock: time moves only when the kit advances it,
// and its timers fire then, one at a time in (deadline, arm order), on the
// goroutine that advances it. An AfterFunc callback runs there too (the
// engine's only post a message); a timer made by NewTimer, After or
// NewTicker sends on its channel without blocking, as the time package's
// do.
type fakeClock struct {
	k *Kit

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap
}

var _ clockwork.Clock = (*fakeClock)(nil)

// epoch is where the kit's time starts: a fixed instant, so that a test's
// times are the same on every run.
var epoch = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock(k *Kit) *fakeClock { return &fakeClock{k: k, now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *fakeClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep blocks until the kit's time has moved on by d.
func (c *fakeClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *fakeClock) NewTimer(d time.Duration) clockwork.Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), idx: -1}
	t.Reset(d)
	return t
}

func (c *fakeClock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic("wardentest: non-positive interval for NewTicker")
	}
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), idx: -1, period: d}
	t.Reset(d)
	return fakeTicker{t}
}

// AfterFunc runs f once the kit's time reaches d from now. With d <= 0 it
// runs f at once on a goroutine of its own, which the kit counts as the
// engine's work.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &fakeTimer{c: c, fn: f, idx: -1}
	t.Reset(d)
	return t
}

// next removes and returns the earliest timer due at or before until, and
// moves the time to its deadline; nil when there is none.
func (c *fakeClock) next(until time.Time) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 || c.timers[0].at.After(until) {
		return nil
	}
	t := heap.Pop(&c.timers).(*fakeTimer)
	if t.at.After(c.now) {
		c.now = t.at
	}
	if t.period > 0 {
		t.at = t.at.Add(t.period)
		c.seq++
		t.seq = c.seq
		heap.Push(&c.timers, t)
	}
	return t
}

// set moves the time to t if it is later.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// fakeTimer is a timer of fakeClock: an AfterFunc (fn) or one with a
// channel (ch), a ticker when period is set.
type fakeTimer struct {
	c      *fakeClock
	fn     func()
	ch     chan time.Time
	period time.Duration
	at     time.Time // guarded by c.mu, as seq and idx
	seq    uint64
	idx    int // index in c.timers; -1 when not armed
}

func (t *fakeTimer) Chan() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.idx < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.idx)
	return true
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	was := t.idx >= 0
	if was {
		heap.Remove(&c.timers, t.idx)
	}
	if d <= 0 && t.period == 0 {
		now := c.now
		c.mu.Unlock()
		if t.fn != nil {
			c.k.goBusy(func() { t.fire(now) })
		} else {
			t.fire(now)
		}
		return was
	}
	t.at = c.now.Add(max(d, 0))
	c.seq++
	t.seq = c.seq
	heap.Push(&c.timers, t)
	c.mu.Unlock()
	return was
}

// fire runs the timer's callback, or sends now on its channel unless a
// tick is already waiting there.
func (t *fakeTimer) fire(now time.Time) {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

// fakeTicker is a periodic fakeTimer.
type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) Chan() <-chan time.Time { return k.t.ch }
func (k fakeTicker) Stop()                  { k.t.Stop() }
func (k fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("wardentest: non-positive interval for Ticker.Reset")
	}
	k.t.c.mu.Lock()
	k.t.period = d
	k.t.c.mu.Unlock()
	k.t.Reset(d)
}

// timerHeap orders the armed timers by (deadline, arm order).
type timerHeap []*fakeTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*fakeTimer)
	t.idx = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.idx = -1
	*h = old[:len(old)-1]
	return t
}
