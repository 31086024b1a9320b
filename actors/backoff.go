package actors

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/warden-go/warden/messages"
)

// spinPoll is a spin lock waiter's progress through its back-off
// (messages.BackOff): the pause before its next poll and how many pauses
// it took so far. Each waiter's starts at its first refusal, as each of
// Redisson's waiting threads makes its own BackOffPolicy.
type spinPoll struct {
	next  time.Duration // 0: no pause taken yet
	fails int
}

// pause returns the pause before w's next poll and moves w's back-off on:
// Redisson's ExponentialBackOffPolicy. The pause is the back-off's
// Initial, then each one Multiplier times the last plus a jitter of 0 to
// fails-1 ms (fails counting this one), at most Max; once it reached Max
// it stays there, without jitter.
func (p *spinPoll) pause(w *waiter) time.Duration {
	b := w.req.BackOff.OrDefault()
	if p.next == 0 {
		p.next = b.Initial
	}
	if p.next == b.Max {
		return b.Max
	}
	cur := p.next
	p.fails++
	p.next = b.Max
	if cur <= b.Max/time.Duration(b.Multiplier) {
		next := cur*time.Duration(b.Multiplier) + time.Duration(spinJitter(w.req, p.fails))*time.Millisecond
		if next >= cur && next < b.Max { // (next < cur: the jitter overflowed)
			p.next = next
		}
	}
	return cur
}

// spinJitter is the jitter of a waiter's fails-th pause: 0 to fails-1 ms.
// It is drawn from the waiter's owner and request ID, which hold the
// client's random ID, so the waiters of different processes spread apart,
// while a simulation, whose IDs come from its seed, replays it exactly.
func spinJitter(req *messages.Acquire, fails int) int {
	if fails <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(req.Owner))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(req.RequestID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendInt(nil, int64(fails), 10))
	return int(h.Sum64() % uint64(fails))
}
