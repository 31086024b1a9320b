package sim

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// clientClock is one client's view of the simulation clock: simulated time
// plus the client's own skew (a clock jump moves it). Its timers fire on
// the driver, in (deadline, arm order), one at a time; a timer's callback
// only posts a message, so it never blocks the driver.
type clientClock struct {
	w  *world
	cl *client
}

var _ clockwork.Clock = (*clientClock)(nil)

func (c *clientClock) Now() time.Time                  { return c.w.epochNow().Add(c.cl.skew) }
func (c *clientClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *clientClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// AfterFunc runs f on the driver d from now. After the run it returns a
// timer that never fires.
func (c *clientClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &simTimer{c: c, f: f}
	if !c.w.teardown.Load() {
		t.arm(d)
	}
	return t
}

// After, NewTimer, NewTicker and Sleep would make a goroutine block on a
// channel the driver cannot see; the engine does not use them.
func (c *clientClock) After(time.Duration) <-chan time.Time {
	panic("sim: Clock.After is not supported; use AfterFunc")
}
func (c *clientClock) Sleep(time.Duration) { panic("sim: Clock.Sleep is not supported") }
func (c *clientClock) NewTimer(time.Duration) clockwork.Timer {
	panic("sim: Clock.NewTimer is not supported; use AfterFunc")
}
func (c *clientClock) NewTicker(time.Duration) clockwork.Ticker {
	panic("sim: Clock.NewTicker is not supported; use AfterFunc")
}

type simTimer struct {
	c  *clientClock
	f  func()
	ev *event
}

func (t *simTimer) arm(d time.Duration) {
	if d < 0 {
		d = 0
	}
	ev := t.c.w.after(d, t.c.cl, nil)
	ev.fire = func() {
		t.ev = nil
		t.f()
	}
	t.ev = ev
}

func (t *simTimer) Chan() <-chan time.Time { return nil }

func (t *simTimer) Stop() bool {
	if t.ev == nil || t.c.w.teardown.Load() {
		return false
	}
	t.ev.dead = true
	t.ev = nil
	return true
}

func (t *simTimer) Reset(d time.Duration) bool {
	was := t.Stop()
	if !t.c.w.teardown.Load() {
		t.arm(d)
	}
	return was
}
