package sim

import (
	"fmt"
	"time"
)

// planFaults draws the run's faults from the seed and schedules them. The
// losses (requests, replies, messages) and the latency are drawn per
// message as the run goes; the others are planned here: when they happen
// and which client they hit.
func planFaults(w *world, r *redisSim, o *Options, clients []*client) {
	pick := func() *client { return clients[w.rng.IntN(len(clients))] }
	when := func() time.Duration { return w.jitter(o.Length/10, o.Length*7/10) }
	longest := max(o.Watchdog, o.Lease)
	if o.has(FaultLatency) {
		r.note(Fault{Kind: FaultLatency, Client: -1, From: 0, To: o.Length,
			Detail: fmt.Sprintf("0..%v a trip", o.MaxLatency)})
	}
	if o.has(FaultPartition) {
		cl, from := pick(), when()
		for range 1 + w.rng.IntN(2) {
			to := from + w.jitter(o.Watchdog/2, 2*o.Watchdog)
			w.at(from, nil, func() {
				r.note(Fault{Kind: FaultPartition, Client: cl.id, From: w.now, To: to})
				cl.partitioned = true
				cl.ps.broken(errReset)
			})
			w.at(to, nil, func() { cl.partitioned = false })
			cl, from = pick(), to+w.jitter(0, o.Watchdog)
		}
	}
	if o.has(FaultPause) {
		cl, from := pick(), when()
		to := from + longest + w.jitter(longest/5, longest)
		w.at(from, nil, func() {
			r.note(Fault{Kind: FaultPause, Client: cl.id, From: w.now, To: to})
			cl.pausedUntil = to
		})
	}
	if o.has(FaultClockJump) {
		cl, at := pick(), when()
		jump := w.jitter(500*time.Millisecond, 2*time.Second)
		if w.chance(0.5) {
			jump = -jump
		}
		w.at(at, nil, func() {
			r.note(Fault{Kind: FaultClockJump, Client: cl.id, From: w.now, To: w.now, Detail: fmt.Sprintf("%+v", jump)})
			cl.skew += jump
		})
	}
	if o.has(FaultRestart) {
		at := when()
		w.at(at, nil, func() {
			r.note(Fault{Kind: FaultRestart, Client: -1, From: w.now, To: w.now, Detail: "data lost"})
			r.restart()
		})
	}
	if o.has(FaultCrash) && len(clients) > 1 {
		cl, at := pick(), w.jitter(o.Length/5, o.Length*4/5)
		w.at(at, nil, func() {
			r.note(Fault{Kind: FaultCrash, Client: cl.id, From: w.now, To: w.now})
			cl.crashed = true
			cl.crashedAt = w.now
			cl.ps.broken(errReset)
		})
	}
}
