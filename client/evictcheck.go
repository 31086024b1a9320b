package client

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// evictionCheckTimeout bounds the check of the server's eviction policy
// that New starts.
const evictionCheckTimeout = 5 * time.Second

// evictionDoc is where the server's needs are written down.
const evictionDoc = "docs/server.md"

// checkEviction asks the server, in the background as New returns, which
// maxmemory-policy it runs (CONFIG GET), on every master of a Cluster and
// every shard of a Ring, and logs one warning when one of them may evict
// keys: every policy but noeviction does, and the volatile-* ones pick
// among keys with a TTL, which every lock has. A server that refuses
// CONFIG GET (an ACL, a managed service that renamed it) is noted at
// Debug, and the Client goes on; a server on noeviction logs nothing. ctx
// ends with Close.
func (c *Client) checkEviction(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, evictionCheckTimeout)
	defer cancel()
	var (
		mu       sync.Mutex
		evicting []string // "<addr>: <policy>", on a Cluster or Ring
		policy   string
		maxmem   string
	)
	ask := func(ctx context.Context, node redis.Cmdable, addr string) {
		cfg, err := node.ConfigGet(ctx, "maxmemory*").Result()
		p, ok := cfg["maxmemory-policy"]
		switch {
		case ctx.Err() != nil:
			return // closed, or past the bound: nothing worth saying
		case err != nil || !ok:
			if err == nil {
				err = errors.New("no maxmemory-policy in its reply")
			}
			c.opts.logger.Debug("warden: could not read the server's maxmemory-policy (CONFIG GET refused or unknown); "+
				"not checked whether the server may evict locks", "addr", addr, "err", err)
			return
		case p == "noeviction":
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if addr != "" {
			evicting = append(evicting, addr+": "+p)
		}
		policy, maxmem = p, cfg["maxmemory"]
	}
	switch r := c.rdb.(type) {
	case *redis.ClusterClient:
		_ = r.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			ask(ctx, node, node.Options().Addr)
			return nil
		})
	case *redis.Ring:
		_ = r.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			ask(ctx, node, node.Options().Addr)
			return nil
		})
	default:
		ask(ctx, c.rdb, "")
	}
	if policy == "" {
		return
	}
	attrs := []any{"policy", policy, "maxmemory", maxmem}
	if len(evicting) > 0 {
		sort.Strings(evicting)
		attrs = append(attrs, "servers", strings.Join(evicting, ", "))
	}
	c.opts.logger.Warn("warden: the Redis server's maxmemory-policy may evict keys: under memory pressure "+
		"it deletes locks while they are held (a fixed-lease holder is told only when its lease ends) and "+
		"fencing token counters (FencedLock then fails with ErrFencingReset, or another Client repeats a token); "+
		"set maxmemory-policy noeviction (see "+evictionDoc+")", attrs...)
}
