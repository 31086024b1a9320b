package redisio

import (
	"context"
	"fmt"
	"time"
)

// A fenced lock is a reentrant lock whose every first acquire also takes
// the next value of a per-name counter: its fencing token. Unlock, undo,
// renewal and force-unlock are the reentrant lock's.

var (
	fencedTokenScript = newScript("fenced_token")
)

// TokenKey is a fenced lock's token counter: redisson_lock_token:{name}.
func TokenKey(name string) string {
	return prefixName("redisson_lock_token", name)
}

// FencedAcquire is AcquireSynced for a fenced lock: an acquired result
// carries the holding's token (a first acquire increments the counter, a
// reentry or a replay of the same request reads it).
func (s *Scripts) FencedAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (AcquireResult, int, error) {
	return s.acquireSynced(ctx, r, rs, s.LockArgs(name), owner, reqID, lease, true, false)
}

// FencedToken returns the token of owner's holding of the fenced lock
// name; held is false when owner does not hold it.
func FencedToken(ctx context.Context, r Redis, name, owner string) (token int64, held bool, err error) {
	v, err := fencedTokenScript.Run(ctx, r, []string{name, TokenKey(name)}, owner).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("warden: token %s: %w", name, err)
	}
	if v < 0 {
		return 0, false, nil
	}
	return v, true, nil
}
