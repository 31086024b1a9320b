package redisio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The group lock (Redisson's RedissonFasterMultiLock): many values of one
// group locked all-or-none by one script on one hash, the group's name,
// so one cluster slot and one round trip however many values. Waiters are
// woken on LockChannel(group). The layout is Redisson's: see
// scripts/group_lib.lua. Holds end on Redis's clock (the scripts read
// TIME), as Redisson's end on its clients' clocks.

var (
	groupAcquireScript     = newScript("group_lib", "group_acquire")
	groupUnlockScript      = newScript("group_lib", "group_unlock")
	groupUndoScript        = newScript("group_lib", "group_undo")
	groupRenewScript       = newScript("group_lib", "group_renew")
	groupExtendScript      = newScript("group_lib", "group_extend")
	groupQueryScript       = newScript("group_lib", "group_query")
	groupForceUnlockScript = newScript("group_lib", "group_forceunlock")
)

// GroupValueSep joins a group holding's values in Held.Values; no value
// contains it.
const GroupValueSep = ":"

// GroupValues splits Held.Values into the values.
func GroupValues(joined string) []string {
	if joined == "" {
		return nil
	}
	return strings.Split(joined, GroupValueSep)
}

// withValues appends values to args.
func withValues(args []any, values []string) []any {
	for _, v := range values {
		args = append(args, v)
	}
	return args
}

// GroupAcquire runs one acquire attempt of every value of group for owner
// with request ID reqID, followed by WAIT for rs.Replicas. It acquires all
// of them or none; PTTL, when refused, is the time until the last hold of
// another owner's on one of the values ends. A repeated reqID returns its
// first result while owner holds the values. It returns how many replicas
// acknowledged.
func (s *Scripts) GroupAcquire(ctx context.Context, r Redis, rs ReplicaSync, group, owner, reqID string, lease time.Duration,
	values []string) (AcquireResult, int, error) {
	args := withValues([]any{owner, Millis(lease), reqID, Millis(LatchTTL)}, values)
	c, acks, err := runSynced(ctx, r, rs, groupAcquireScript, []string{group, AcquireLatchKey(group, owner)}, args...)
	if err != nil {
		return AcquireResult{}, 0, fmt.Errorf("warden: group acquire %s: %w", group, err)
	}
	res, err := acquireReply("group acquire", group, c)
	return res, int(acks), err
}

// GroupUnlock releases one hold of every value of owner's, followed by
// WAIT for rs.Replicas. It returns the remaining hold count, held=false
// when owner does not hold every value (nothing is released then), and
// the replica acks. At 0 the values' fields are deleted and the unlock
// message published on LockChannel(group); otherwise each value's hold is
// refreshed to lease. A repeated reqID returns the first result.
func (s *Scripts) GroupUnlock(ctx context.Context, r Redis, rs ReplicaSync, group, owner, reqID string, lease time.Duration,
	values []string) (remaining int, held bool, acks int, err error) {
	if len(values) == 0 {
		return 0, false, 0, nil // nothing known to release: not held
	}
	args := withValues([]any{UnlockMessage, Millis(lease), owner, s.publish, latchTTLArg, s.seq.Add(1), reqID}, values)
	c, n, err := runSynced(ctx, r, rs, groupUnlockScript,
		[]string{group, LockChannel(group), UnlockRecordKey(group, s.token+groupRecord), AcquireLatchKey(group, owner)}, args...)
	if err != nil {
		return 0, false, 0, fmt.Errorf("warden: group unlock %s: %w", group, err)
	}
	remaining, held, err = unlockReply("group unlock", group, c)
	return remaining, held, int(n), err
}

// GroupUndoAcquire reverses the group acquire reqID of owner's if, and
// only if, Redis applied it, and reports whether it undid one.
func (s *Scripts) GroupUndoAcquire(ctx context.Context, r Redis, group, owner, reqID string, values []string) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	args := withValues([]any{owner, reqID, s.publish, UnlockMessage}, values)
	return runFlag(ctx, r, groupUndoScript, "group undo acquire", group, []string{group, LockChannel(group), AcquireLatchKey(group, owner)}, args...)
}

// GroupRenew extends owner's hold of every value to ttl from now; it
// reports false when owner no longer holds them all.
func (s *Scripts) GroupRenew(ctx context.Context, r Redis, group, owner string, values []string, ttl time.Duration) (bool, error) {
	args := withValues([]any{Millis(ttl), owner}, values)
	return runFlag(ctx, r, groupRenewScript, "group renew", group, []string{group}, args...)
}

// GroupExtend sets owner's fixed-lease hold of every value to end lease
// from now (Lock.Extend); it reports false, writing nothing, when owner no
// longer holds them all.
func (s *Scripts) GroupExtend(ctx context.Context, r Redis, group, owner string, values []string, lease time.Duration) (bool, error) {
	args := withValues([]any{Millis(lease), owner}, values)
	return runFlag(ctx, r, groupExtendScript, "group extend", group, []string{group}, args...)
}

// GroupHoldCount returns owner's hold count of the values (the smallest
// over them; 0 when it does not hold every one).
func GroupHoldCount(ctx context.Context, r Redis, group, owner string, values []string) (int, error) {
	if len(values) == 0 {
		return 0, nil
	}
	n, err := runInt(ctx, r, groupQueryScript, "group hold count", group, []string{group}, withValues([]any{owner}, values)...)
	return int(n), err
}

// GroupIsLocked reports whether anyone holds any of the values (Redisson's
// isLocked of a faster multi-lock).
func GroupIsLocked(ctx context.Context, r Redis, group string, values []string) (bool, error) {
	return runFlag(ctx, r, groupQueryScript, "group is locked", group, []string{group}, withValues([]any{""}, values)...)
}

// GroupForceUnlock releases the values whoever holds them, wakes the
// group's waiters if any was held, and reports whether any was.
func (s *Scripts) GroupForceUnlock(ctx context.Context, r Redis, group string, values []string) (bool, error) {
	n, err := runInt(ctx, r, groupForceUnlockScript, "group force unlock", group, []string{group, LockChannel(group)},
		withValues([]any{UnlockMessage, s.publish}, values)...)
	return n > 0, err
}

// renewWithGroups is Renew of a batch with group lock holdings: each of
// those is a group renewal script call (as GroupRenew's), the others one
// renewal script call, all sent as one pipeline (one round trip). Each
// renewal may run twice (pipelineScripts), which renews to the same end.
func (s *Scripts) renewWithGroups(ctx context.Context, r Redis, batch []Held, ttl time.Duration) ([]bool, error) {
	var rest []Held
	var at []int
	for i, h := range batch {
		if h.Values == "" {
			rest, at = append(rest, h), append(at, i)
		}
	}
	groups := make([]*redis.Cmd, len(batch))
	var restCmd *redis.Cmd
	pipelineScripts(ctx, r, func(pipe redis.Pipeliner, eval evalFunc) {
		for i, h := range batch {
			if h.Values != "" {
				groups[i] = eval(groupRenewScript, ctx, pipe, []string{h.Name},
					withValues([]any{Millis(ttl), h.Field}, GroupValues(h.Values))...)
			}
		}
		if len(rest) > 0 {
			keys, args := renewArgs(rest, ttl)
			restCmd = eval(renewScript, ctx, pipe, keys, args...)
		}
	})
	out := make([]bool, len(batch))
	var errs []error
	for i, c := range groups {
		if c == nil {
			continue
		}
		n, err := c.Int64()
		if err != nil {
			errs = append(errs, fmt.Errorf("warden: group renew %s: %w", batch[i].Name, err))
		}
		out[i] = n == 1
	}
	if restCmd != nil {
		ok, err := renewReply(restCmd, len(rest))
		if err != nil {
			errs = append(errs, err)
		}
		for j, i := range at {
			if err == nil {
				out[i] = ok[j]
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
