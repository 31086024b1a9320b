package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// Uncontended is one run of the uncontended workload: mean time per pair
// of warden's lock+unlock, of the same two Lua scripts called directly,
// and of two PINGs, measured in alternating blocks on the same Redis.
type Uncontended struct {
	Pairs                 int
	Warden, Scripts, Ping time.Duration // per pair
}

// FloorRatio is the share of the 2xPING floor's speed warden reaches.
func (u Uncontended) FloorRatio() float64 { return float64(u.Ping) / float64(u.Warden) }

// ScriptsRatio is the share of the bare scripts' speed warden reaches.
func (u Uncontended) ScriptsRatio() float64 { return float64(u.Scripts) / float64(u.Warden) }

// RunUncontended measures pairs lock+unlock pairs of a fresh handle of c
// against the two baselines on rdb, alternating in blocks of 200.
func RunUncontended(ctx context.Context, c *client.Client, rdb redis.UniversalClient, pairs int) (Uncontended, error) {
	scripts, err := redisio.NewScripts("publish")
	if err != nil {
		return Uncontended{}, err
	}
	l := c.Lock("bench:uncontended")
	bare := scripts.LockArgs("bench:bare") // made once, as a key actor makes its lock's
	const block = 200
	u := Uncontended{Pairs: pairs}
	var lockTime, pingTime, scriptTime time.Duration
	for done := 0; done < pairs; done += block {
		n := min(block, pairs-done)
		start := time.Now()
		for range n {
			if err := l.Lock(ctx); err != nil {
				return u, err
			}
			if err := l.Unlock(ctx); err != nil {
				return u, err
			}
		}
		lockTime += time.Since(start)
		start = time.Now()
		for range n {
			if err := rdb.Ping(ctx).Err(); err != nil {
				return u, err
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				return u, err
			}
		}
		pingTime += time.Since(start)
		start = time.Now()
		for i := range n {
			id := strconv.Itoa(done + i)
			if _, _, err := scripts.AcquireWith(ctx, rdb, redisio.ReplicaSync{}, bare, "bare-owner", id, 30*time.Second, false, false); err != nil {
				return u, err
			}
			if _, held, _, err := scripts.UnlockWith(ctx, rdb, redisio.ReplicaSync{}, bare, "bare-owner", id, 30*time.Second, true); err != nil || !held {
				return u, fmt.Errorf("bare unlock: held=%v: %w", held, err)
			}
		}
		scriptTime += time.Since(start)
	}
	u.Warden = lockTime / time.Duration(pairs)
	u.Ping = pingTime / time.Duration(pairs)
	u.Scripts = scriptTime / time.Duration(pairs)
	return u, nil
}
