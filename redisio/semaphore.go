package redisio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	semAcquireScript       = newScript("sem_acquire")
	semUndoAcquireScript   = newScript("sem_undoacquire")
	semReleaseScript       = newScript("sem_release")
	semTrySetPermitsScript = newScript("sem_trysetpermits")
	semAddPermitsScript    = newScript("sem_addpermits")
	semDrainScript         = newScript("sem_drain")
	semSetPermitsScript    = newScript("sem_setpermits")
	semReleaseIfExists     = newScript("sem_releaseifexists")
)

// SemaphoreChannel is the pub/sub channel a semaphore's (and a
// permit-expirable semaphore's) new available count is published on:
// redisson_sc:{name}. The message is the count as decimal text.
func SemaphoreChannel(name string) string {
	return prefixName("redisson_sc", name)
}

// PermitsTotalKey is the key beside a semaphore that records the total
// its permits were set to by warden (TrySetPermits, SetPermits, and
// AddPermits, which moves it by the same delta):
// warden_permits_total:{name}, a STRING holding the integer, with the
// semaphore's TTL. The semaphore's own key stays Redisson's; Redisson
// writes no total, so a semaphore it set has none. The total means
// something only while the semaphore exists.
func PermitsTotalKey(name string) string {
	return prefixName("warden_permits_total", name)
}

// OpLatchKey is the key that remembers the result of one non-idempotent
// semaphore, permit or count-down latch write for the retry window, so a
// retried request is applied once: warden_latch:{name}:<requestID>.
func OpLatchKey(name, reqID string) string {
	return prefixName("warden_latch", name) + ":" + reqID
}

// semInts reads a script's reply of exactly n integers.
func semInts(c *redis.Cmd, n int) ([]int64, error) {
	v, err := c.Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(v) != n {
		return nil, fmt.Errorf("warden: unexpected reply %v", c.Val())
	}
	return v, nil
}

// SemaphoreAcquire takes permits (at least 1) when at least that many are
// available; a missing semaphore has none. available is the count after
// taking, or the current count when refused. The acquire is applied once
// per reqID: a repeat returns the first result and takes nothing, and once
// SemaphoreUndoAcquire ran for reqID it is refused. rs asks for replica
// acknowledgement; acks is how many replicas acknowledged.
func (s *Scripts) SemaphoreAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, reqID string, permits int64) (acquired bool, available int64, acks int, err error) {
	c, n, err := runSynced(ctx, r, rs, semAcquireScript, []string{name, OpLatchKey(name, reqID)},
		strconv.FormatInt(permits, 10), Millis(LatchTTL))
	if err != nil {
		return false, 0, 0, fmt.Errorf("warden: semaphore acquire %s: %w", name, err)
	}
	v, err := semInts(c, 2)
	if err != nil {
		return false, 0, 0, fmt.Errorf("warden: semaphore acquire %s: %w", name, err)
	}
	return v[0] == 1, v[1], int(n), nil
}

// SemaphoreUndoAcquire gives back the permits the acquire with request ID
// reqID took, if, and only if, Redis applied it; the new count is published.
// It reports whether it gave anything back. Afterwards reqID is spent: an
// acquire with it (say a late retry) takes nothing, so a new attempt needs a
// new request ID.
func (s *Scripts) SemaphoreUndoAcquire(ctx context.Context, r Redis, name, reqID string) (bool, error) {
	return runFlag(ctx, r, semUndoAcquireScript, "semaphore undo acquire", name, []string{name, OpLatchKey(name, reqID), SemaphoreChannel(name)},
		s.publish, Millis(LatchTTL))
}

// SemaphoreRelease adds permits (at least 1) and publishes the new count,
// which it returns. No prior acquire is needed. It is applied once per
// reqID: a repeat returns the first result. A release that makes the
// semaphore anew (it was deleted, by Redisson say) deletes the total left
// of the old one (PermitsTotalKey).
func (s *Scripts) SemaphoreRelease(ctx context.Context, r Redis, name, reqID string, permits int64) (int64, error) {
	return s.countingWrite(ctx, r, semReleaseScript, "semaphore release", name, SemaphoreChannel(name), reqID,
		strconv.FormatInt(permits, 10), PermitsTotalKey(name))
}

// SemaphoreTrySetPermits sets the semaphore to permits (at least 0) if it
// does not exist, records permits as its total (PermitsTotalKey), and then
// publishes the count. It reports whether it set it.
func (s *Scripts) SemaphoreTrySetPermits(ctx context.Context, r Redis, name string, permits int64) (bool, error) {
	return s.SemaphoreTrySetPermitsTTL(ctx, r, name, permits, 0)
}

// SemaphoreTrySetPermitsTTL is SemaphoreTrySetPermits that also gives the
// semaphore a time to live (whole ms, at least 1) when it sets it; ttl 0
// means none (Redisson's trySetPermits(permits, timeToLive)).
func (s *Scripts) SemaphoreTrySetPermitsTTL(ctx context.Context, r Redis, name string, permits int64, ttl time.Duration) (bool, error) {
	ttlArg := "0"
	if ttl != 0 {
		if ttl < 0 {
			return false, fmt.Errorf("warden: semaphore try set permits %s: invalid ttl %v", name, ttl)
		}
		ttlArg = Millis(ttl)
	}
	return runFlag(ctx, r, semTrySetPermitsScript, "semaphore try set permits", name, []string{name, SemaphoreChannel(name), PermitsTotalKey(name)},
		strconv.FormatInt(permits, 10), s.publish, ttlArg)
}

// SemaphoreSetPermits sets the semaphore's available permits to permits
// (at least 0), whether or not it exists, and keeps its TTL if it has one;
// permits becomes its total (PermitsTotalKey), with the same TTL.
// The new count is published when it is above 0. It returns the count
// there was (0 when absent). Setting is idempotent: a retry sets the same
// count.
func (s *Scripts) SemaphoreSetPermits(ctx context.Context, r Redis, name string, permits int64) (int64, error) {
	return runInt(ctx, r, semSetPermitsScript, "semaphore set permits", name, []string{name, SemaphoreChannel(name), PermitsTotalKey(name)},
		strconv.FormatInt(permits, 10), s.publish)
}

// SemaphoreReleaseIfExists adds permits (at least 1) only if the semaphore
// exists, and then publishes the new count (Redisson's releaseIfExists). It
// reports whether it did, and the new count. It is applied once per reqID:
// a repeat returns the first result.
func (s *Scripts) SemaphoreReleaseIfExists(ctx context.Context, r Redis, name, reqID string, permits int64) (bool, int64, error) {
	c := semReleaseIfExists.Run(ctx, r, []string{name, SemaphoreChannel(name), OpLatchKey(name, reqID)},
		strconv.FormatInt(permits, 10), s.publish, Millis(LatchTTL))
	v, err := semInts(c, 2)
	if err != nil {
		return false, 0, fmt.Errorf("warden: semaphore release if exists %s: %w", name, err)
	}
	return v[0] == 1, v[1], nil
}

// SemaphoreAddPermits adds delta permits (negative removes them; the count
// may go negative) and returns the new count, published when it is above
// 0. A recorded total (PermitsTotalKey) moves by delta too; none is
// started where there was none. It is applied once per reqID: a repeat returns the first result.
func (s *Scripts) SemaphoreAddPermits(ctx context.Context, r Redis, name, reqID string, delta int64) (int64, error) {
	return s.countingWrite(ctx, r, semAddPermitsScript, "semaphore add permits", name, SemaphoreChannel(name), reqID,
		strconv.FormatInt(delta, 10), PermitsTotalKey(name))
}

// SemaphoreAvailable returns the semaphore's available permits, 0 when it
// does not exist. The count may be negative (after SemaphoreAddPermits).
func SemaphoreAvailable(ctx context.Context, r Redis, name string) (int64, error) {
	return readCount(ctx, r, "semaphore available", name)
}

// countingWrite runs sc, a counting write applied once per reqID (KEYS:
// name, channel, the op latch, then more, as a semaphore's total; ARGV:
// arg, publish command, latch TTL), and returns its integer reply.
func (s *Scripts) countingWrite(ctx context.Context, r Redis, sc *redis.Script, op, name, channel, reqID, arg string, more ...string) (int64, error) {
	keys := append([]string{name, channel, OpLatchKey(name, reqID)}, more...)
	return runInt(ctx, r, sc, op, name, keys, arg, s.publish, Millis(LatchTTL))
}

// readCount reads the integer at name: a semaphore's permits or a latch's
// count, 0 when absent.
func readCount(ctx context.Context, r Redis, op, name string) (int64, error) {
	n, err := r.Get(ctx, name).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("warden: %s %s: %w", op, name, err)
	}
	return n, nil
}

// SemaphoreDrain sets the semaphore's count to 0 and returns what it was: 0
// when it does not exist (nothing is written then), and a negative count as
// it was, like Redisson's drainPermits (the count still becomes 0).
// Nothing is published. A retried drain whose first reply was lost returns
// 0: the permits were taken by the first run.
func (s *Scripts) SemaphoreDrain(ctx context.Context, r Redis, name string) (int64, error) {
	return runInt(ctx, r, semDrainScript, "semaphore drain", name, []string{name})
}
