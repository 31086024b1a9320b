package actors

import (
	"time"

	"github.com/warden-go/warden/messages"
)

// A fair-lock waiter's place in Redis's queue is kept alive the way a
// holder's lease is: every attempt of the waiter's while it is queued sets
// its liveness in warden_fair_places:{name} to now + its place time
// (redisio.Scripts.FairAcquire with a place), and a queued waiter attempts
// again at least every third of its place time (fairLookAgain), whatever
// else wakes it. Its deadline in redisson_lock_timeout:{name} is
// Redisson's (the previous tail's plus its allowance), and each attempt
// keeps it far enough ahead that Redisson clients' scripts, which move
// every deadline down by an allowance whenever one of their threads takes
// the lock ahead, never drop it. So a live waiter never loses its place
// however long it waits, whoever acquires ahead of it, and the place of a
// waiter whose process died lapses within one place time of its last
// attempt: the next warden attempt then drops it, wherever it stands. The
// refreshes end with the attempts: when the waiter acquires, gives up (its
// give-up leaves a marker that refuses an attempt still on its way), times
// out, or the engine closes.

// placeTime is how long w's place outlives its last refresh: the engine's
// FairPlaceTime (the watchdog timeout unless set), or w's wait when that
// is shorter, in whole milliseconds, at least 1 ms.
func (c *Config) placeTime(req *messages.Acquire) time.Duration {
	p := c.FairPlaceTime
	if p <= 0 {
		p = c.Watchdog
	}
	if req.Wait > 0 && req.Wait < p {
		p = req.Wait
	}
	return max(p.Truncate(time.Millisecond), time.Millisecond)
}

// fairLookAgain bounds how long a refused fair waiter sleeps before its
// next attempt: a third of its place time, so that two refreshes in a row
// can be late before the place would lapse.
func (c *Config) fairLookAgain(req *messages.Acquire) time.Duration {
	return max(c.placeTime(req)/3, time.Millisecond)
}
