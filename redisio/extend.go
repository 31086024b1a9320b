package redisio

import (
	"context"
	"time"
)

var extendScript = newScript("rw_lib", "extend")

// Extend sets the lease of the holding h anew, if h.Field still holds the
// lock h.Name: a lock held by one owner alone gets lease as its TTL, even
// when that is shorter. For a read/write lock (h.Shared) a write hold sets
// the hash's TTL to lease, but not below the owner's own read holds; a
// read hold (h.ReadPrefix) sets each of the owner's read holds' timeout
// keys to lease and the hash to its longest read hold (raised only, while
// the owner also holds the write lock). It reports whether the field held
// the lock.
func (s *Scripts) Extend(ctx context.Context, r Redis, h Held, lease time.Duration) (bool, error) {
	prefix, keyPrefix := h.ReadPrefix, ""
	if h.Shared {
		if prefix == "" {
			prefix = renewRaiseOnly
		}
		keyPrefix = rwKeyPrefix(h.Name)
	}
	return runFlag(ctx, r, extendScript, "extend", h.Name, []string{h.Name}, h.Field, Millis(lease), prefix, keyPrefix)
}
