package client

import (
	"context"
	"errors"
	"net"
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
// keys: every policy but noeviction does; the allkeys-* ones pick among
// every key, the volatile-* ones among keys with a TTL, which every lock
// has (not the fencing token counters). A server that refuses CONFIG GET
// (an ACL, a managed service that renamed it), fails to answer it or does
// not answer within evictionCheckTimeout is noted at Debug, and the Client
// goes on; a server on noeviction logs nothing. closed ends with Close,
// which ends the check without a note.
func (c *Client) checkEviction(closed context.Context) {
	ctx, cancel := context.WithTimeout(closed, evictionCheckTimeout)
	defer cancel()
	const unchecked = "not checked whether the server may evict locks"
	var (
		mu       sync.Mutex
		evicting []string // "<addr>: <policy>"
		policy   string
		maxmem   string
		allkeys  bool // some server's policy evicts keys without a TTL too
	)
	ask := func(ctx context.Context, node redis.Cmdable, addr string) {
		cfg, err := node.ConfigGet(ctx, "maxmemory*").Result()
		p, ok := cfg["maxmemory-policy"]
		switch {
		case closed.Err() != nil:
			return // closed: nothing worth saying
		case ctx.Err() != nil || timedOut(err):
			c.opts.logger.Debug("warden: "+unchecked+": CONFIG GET maxmemory* timed out",
				"addr", addr, "timeout", evictionCheckTimeout)
			return
		case err != nil || !ok:
			if err == nil {
				err = errors.New("no maxmemory-policy in its reply")
			}
			c.opts.logger.Debug("warden: could not ask the server's maxmemory-policy (CONFIG GET maxmemory*); "+unchecked,
				"addr", addr, "err", err)
			return
		case p == "noeviction":
			return
		}
		mu.Lock()
		defer mu.Unlock()
		evicting = append(evicting, addr+": "+p)
		policy, maxmem = p, cfg["maxmemory"]
		allkeys = allkeys || strings.HasPrefix(p, "allkeys-")
	}
	var (
		many = true
		addr string // a single node's
		err  error
	)
	switch r := c.rdb.(type) {
	case *redis.ClusterClient:
		err = r.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			ask(ctx, node, node.Options().Addr)
			return nil
		})
	case *redis.Ring:
		err = r.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
			ask(ctx, node, node.Options().Addr)
			return nil
		})
	case *redis.Client:
		many, addr = false, r.Options().Addr
		ask(ctx, r, addr)
	default:
		many = false
		ask(ctx, c.rdb, "")
	}
	if err != nil && closed.Err() == nil {
		c.opts.logger.Debug("warden: could not reach every server to ask its maxmemory-policy; "+unchecked, "err", err)
	}
	if policy == "" {
		return
	}
	attrs := []any{"policy", policy, "maxmemory", maxmem}
	if many {
		sort.Strings(evicting)
		attrs = append(attrs, "servers", strings.Join(evicting, ", "))
	} else if addr != "" {
		attrs = append(attrs, "addr", addr)
	}
	counters := "fencing token counters, which have no TTL, are kept"
	if allkeys {
		counters = "so are fencing token counters (FencedLock then fails with ErrFencingReset once, or another Client repeats a token)"
	}
	c.opts.logger.Warn("warden: the Redis server's maxmemory-policy may evict keys: under memory pressure "+
		"it deletes locks while they are held (a fixed-lease holder is told only when its lease ends); "+
		counters+"; set maxmemory-policy noeviction (see "+evictionDoc+")", attrs...)
}

// timedOut reports whether err is a network timeout: a server that did not
// answer in time.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
