// Package quorum holds the decisions of the RedLock algorithm over N
// independent Redis masters, as pure functions of counts, durations and
// times: how many masters make a majority, how long one master's attempt
// may take, how much clock drift the validity allows for, when an
// attempt's validity ends, whether an attempt holds the lock, whether a
// majority is out of reach, and whether a holding is lost.
//
// It reads no clock, starts no goroutine, draws nothing at random and
// talks to no Redis: client.RedLock and the simulation's RedLock owners
// both decide through it, with their own clocks and I/O.
package quorum

import "time"

// Quorum is the majority of n masters: n/2+1.
func Quorum(n int) int { return n/2 + 1 }

// NodeTimeout bounds one master's attempt: small against the lease, as
// the algorithm asks (a 10 s lease gives 100 ms), but never below 50 ms.
func NodeTimeout(lease time.Duration) time.Duration {
	return max(lease/100, 50*time.Millisecond)
}

// Drift is the clock drift the validity allows for: 1% of the lease plus
// 2 ms.
func Drift(lease time.Duration) time.Duration {
	return lease/100 + 2*time.Millisecond
}

// ValidUntil is when an attempt that started at start stops being valid:
// start + lease − drift. The time left of it at the attempt's end is the
// algorithm's validity, lease − elapsed − drift.
func ValidUntil(start time.Time, lease time.Duration) time.Time {
	return start.Add(lease - Drift(lease))
}

// Holds tells whether an attempt over n masters that took taken of them
// holds the lock at now: a majority took it and its validity is left.
func Holds(n, taken int, now, validUntil time.Time) bool {
	return taken >= Quorum(n) && now.Before(validUntil)
}

// OutOfReach tells whether so many of n masters failed (errors, no reply
// in time) that no majority is possible.
func OutOfReach(n, failed int) bool {
	return failed > n-Quorum(n)
}

// Lost tells whether a holding over n masters is lost: fewer than a
// majority of its members are still held, or its lease is fixed
// (validUntil not zero) and its validity ended by now.
func Lost(n, held int, now, validUntil time.Time) bool {
	return held < Quorum(n) || (!validUntil.IsZero() && !now.Before(validUntil))
}
