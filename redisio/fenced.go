package redisio

import (
	"context"
	"fmt"
)

// A fenced lock is a reentrant lock whose every first acquire also takes
// the next value of a per-name counter: its fencing token (AcquireWith
// with fenced set). Unlock, undo, renewal and force-unlock are the
// reentrant lock's.

var (
	fencedTokenScript = newScript("fenced_token")
)

// TokenKey is a fenced lock's token counter: redisson_lock_token:{name}.
func TokenKey(name string) string {
	return prefixName("redisson_lock_token", name)
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
