package redisio

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var expireScript = newScript("expire")

// Expire gives every key of one object a time to live (whole ms, at least
// 1), as Redisson's RExpirable.expire does for an object of several keys.
// It reports whether at least one key exists (and got it). All keys must
// share a cluster slot.
func Expire(ctx context.Context, r Redis, keys []string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("warden: expire %s: invalid time to live %v", keys[0], ttl)
	}
	return runExpire(ctx, r, keys, "pexpire", Millis(ttl))
}

// ExpireAt makes every key of one object expire at t (whole unix ms, at
// least 1; a time already past deletes them, as Redis does). It reports
// whether at least one key exists.
func ExpireAt(ctx context.Context, r Redis, keys []string, t time.Time) (bool, error) {
	ms := t.UnixMilli()
	if ms < 1 {
		return false, fmt.Errorf("warden: expire %s: invalid time %v", keys[0], t)
	}
	return runExpire(ctx, r, keys, "pexpireat", strconv.FormatInt(ms, 10))
}

// ClearExpire removes the time to live of every key of one object. It
// reports whether at least one key had one.
func ClearExpire(ctx context.Context, r Redis, keys []string) (bool, error) {
	return runExpire(ctx, r, keys, "persist")
}

// runExpire runs the expiry script with op ("pexpire", "pexpireat" or
// "persist") and its argument, if any, on keys.
func runExpire(ctx context.Context, r Redis, keys []string, op string, arg ...any) (bool, error) {
	args := append([]any{op}, arg...)
	return runFlag(ctx, r, expireScript, op, keys[0], keys, args...)
}

// Delete deletes the keys of one object and reports whether any existed.
// All keys must share a cluster slot.
func Delete(ctx context.Context, r Redis, keys ...string) (bool, error) {
	args := make([]any, 0, len(keys)+1)
	args = append(args, "del")
	for _, k := range keys {
		args = append(args, k)
	}
	cmd := redis.NewIntCmd(ctx, args...)
	_ = r.Process(ctx, cmd)
	n, err := cmd.Result()
	if err != nil {
		return false, fmt.Errorf("warden: delete %s: %w", keys[0], err)
	}
	return n > 0, nil
}
