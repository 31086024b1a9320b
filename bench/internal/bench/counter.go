package bench

import (
	"context"
	"math"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts the commands a client sends and
// the round trips they take (a pipeline is one round trip), and how many
// script calls each round trip that carried any carried. Pub/sub commands
// do not pass through hooks; [ServerStats] counts those.
//
// warden's engine pipelines the script calls its key actors make at the
// same time: a lone call reaches ProcessHook, a batch reaches
// ProcessPipelineHook with every call of the batch, so [Counter.Batches]
// shows the batches the engine sent. Only script calls count there: the
// commands go-redis sends on each new connection (HELLO, and CLIENT
// SETINFO as a pipeline of two) are no batch of the engine's.
type Counter struct {
	cmds, trips atomic.Uint64
	// sizes[n] counts the round trips that carried n script calls; the
	// last one, those that carried MaxBatchCounted or more.
	sizes [MaxBatchCounted + 1]atomic.Uint64
}

// MaxBatchCounted is the largest round trip a Counter tells apart: a
// larger one counts as that many script calls in [Batches].
const MaxBatchCounted = 1024

var _ redis.Hook = (*Counter)(nil)

// Sent is what a Counter has counted so far.
type Sent struct {
	Cmds, Trips uint64
}

// Sub returns s minus an earlier reading.
func (s Sent) Sub(before Sent) Sent {
	return Sent{Cmds: s.Cmds - before.Cmds, Trips: s.Trips - before.Trips}
}

// Read returns the counts so far.
func (c *Counter) Read() Sent { return Sent{Cmds: c.cmds.Load(), Trips: c.trips.Load()} }

// Batches returns the round trips that carried script calls so far, by
// how many each carried.
func (c *Counter) Batches() Batches {
	b := Batches{Trips: make([]uint64, len(c.sizes))}
	last := 0
	for n := range c.sizes {
		if b.Trips[n] = c.sizes[n].Load(); b.Trips[n] > 0 {
			last = n
		}
	}
	b.Trips = b.Trips[:last+1]
	return b
}

// trip counts one round trip of n commands, scripts of them script calls.
func (c *Counter) trip(n, scripts int) {
	c.cmds.Add(uint64(n))
	c.trips.Add(1)
	if scripts > 0 {
		c.sizes[min(scripts, MaxBatchCounted)].Add(1)
	}
}

// add counts n commands sent in as many round trips, for a client that
// is not go-redis (and whose script calls [Counter.Batches] does not see).
func (c *Counter) add(n int) {
	c.cmds.Add(uint64(n))
	c.trips.Add(uint64(n))
}

// isScript tells whether cmd runs a script.
func isScript(cmd redis.Cmder) bool { return scriptCommands[cmd.Name()] }

// DialHook passes dials through uncounted.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook counts one command and one round trip.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trip(1, btoi(isScript(cmd)))
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts every command of the pipeline and one round
// trip.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		scripts := 0
		for _, cmd := range cmds {
			scripts += btoi(isScript(cmd))
		}
		c.trip(len(cmds), scripts)
		return next(ctx, cmds)
	}
}

// Batches is how a client's script calls (EVAL, EVALSHA, their _RO forms,
// FCALL) went to Redis: Trips[n] is the number of round trips that
// carried n of them (a call sent alone is a round trip of 1, a pipeline of
// n calls one of n). Trips[0] is always 0: round trips without a script
// call are not counted.
type Batches struct {
	Trips []uint64
}

// Sub returns b minus an earlier reading.
func (b Batches) Sub(before Batches) Batches {
	d := Batches{Trips: make([]uint64, len(b.Trips))}
	last := 0
	for n := range b.Trips {
		if n < len(before.Trips) {
			d.Trips[n] = b.Trips[n] - before.Trips[n]
		} else {
			d.Trips[n] = b.Trips[n]
		}
		if d.Trips[n] > 0 {
			last = n
		}
	}
	d.Trips = d.Trips[:last+1]
	return d
}

// RoundTrips is the number of round trips that carried script calls.
func (b Batches) RoundTrips() uint64 {
	var t uint64
	for _, k := range b.Trips {
		t += k
	}
	return t
}

// Cmds is the number of script calls the round trips carried.
func (b Batches) Cmds() uint64 {
	var c uint64
	for n, k := range b.Trips {
		c += uint64(n) * k
	}
	return c
}

// Mean is the mean number of script calls a round trip carried, 0 for
// none.
func (b Batches) Mean() float64 {
	if t := b.RoundTrips(); t > 0 {
		return float64(b.Cmds()) / float64(t)
	}
	return 0
}

// Percentile is the nearest-rank percentile p (0 < p <= 1) of the script
// calls a round trip carried, over the round trips; 0 for none.
func (b Batches) Percentile(p float64) int {
	return b.nearestRank(p, func(_ int, k uint64) uint64 { return k })
}

// CallPercentile is the nearest-rank percentile p (0 < p <= 1) over the
// script calls of the size of the round trip each went in: with many
// lone calls and a few large batches, Percentile(0.5) is 1 while
// CallPercentile(0.5) is the batch most calls went in. 0 for none.
func (b Batches) CallPercentile(p float64) int {
	return b.nearestRank(p, func(n int, k uint64) uint64 { return uint64(n) * k })
}

// nearestRank is the nearest-rank percentile p of the round trip sizes n,
// each counted weight(n, Trips[n]) times; 0 when they weigh nothing.
func (b Batches) nearestRank(p float64, weight func(n int, k uint64) uint64) int {
	var total uint64
	for n, k := range b.Trips {
		total += weight(n, k)
	}
	if total == 0 {
		return 0
	}
	rank := uint64(max(math.Ceil(p*float64(total)), 1))
	var seen uint64
	for n, k := range b.Trips {
		if seen += weight(n, k); seen >= rank {
			return n
		}
	}
	return len(b.Trips) - 1
}

// Max is the most script calls a round trip carried, 0 for none.
func (b Batches) Max() int {
	if len(b.Trips) == 0 {
		return 0
	}
	return len(b.Trips) - 1
}

// PipelinedShare is the share of the script calls that went in a round
// trip of more than one, 0 for none.
func (b Batches) PipelinedShare() float64 {
	all := b.Cmds()
	if all == 0 {
		return 0
	}
	var single uint64
	if len(b.Trips) > 1 {
		single = b.Trips[1]
	}
	return float64(all-single) / float64(all)
}
