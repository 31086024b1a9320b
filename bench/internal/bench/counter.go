package bench

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts the commands a client sends and
// the round trips they take (a pipeline is one round trip). Pub/sub
// commands do not pass through hooks; [ServerStats] counts those.
type Counter struct {
	cmds, trips atomic.Uint64
}

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

// add counts n commands sent in as many round trips, for a client that
// is not go-redis.
func (c *Counter) add(n int) {
	c.cmds.Add(uint64(n))
	c.trips.Add(uint64(n))
}

// DialHook passes dials through uncounted.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook counts one command and one round trip.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.cmds.Add(1)
		c.trips.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts every command of the pipeline and one round
// trip.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.cmds.Add(uint64(len(cmds)))
		c.trips.Add(1)
		return next(ctx, cmds)
	}
}
