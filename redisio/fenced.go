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
	fencedRaiseScript = newScript("fenced_raise")
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

// RaiseToken raises the token counter of the fenced lock name to at least
// highest, a token already handed out, in one step: after the counter went
// backwards, the next first acquire takes highest+1. It returns the
// counter's value after the call; a counter already at highest or above is
// left as it is.
func RaiseToken(ctx context.Context, r Redis, name string, highest int64) (int64, error) {
	v, err := fencedRaiseScript.Run(ctx, r, []string{TokenKey(name)}, highest).Int64()
	if err != nil {
		return 0, fmt.Errorf("warden: raise token counter %s: %w", name, err)
	}
	return v, nil
}
