package redisio

import (
	"context"
	"time"
)

// The non-reentrant locks (Redisson's RedissonNonReentrantLock and
// RedissonNonReentrantFairLock) keep the reentrant and fair locks' keys,
// channels and scripts: their acquire only refuses the owner that already
// holds the lock (AcquireResult.AlreadyHeld, Redisson's
// NON_REENTRANT_REACQUIRE) instead of adding a hold, so the owner's count
// in the hash stays 1 (AcquireWith with nonReentrant set, and
// NonReentrantFairAcquire). Their unlock, undo, renewal and force unlock are the
// reentrant and fair locks' own.

// nonReentrantArg is the acquire scripts' non-reentrant flag.
const nonReentrantArg = "1"

// NonReentrantFairAcquire is FairAcquire for a non-reentrant fair lock: an
// owner that already holds the lock is answered AlreadyHeld, with nothing
// changed (neither the lease nor the queue). A repeated reqID that
// acquired still returns its first result.
func (s *Scripts) NonReentrantFairAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string,
	lease, allowance, place time.Duration, now time.Time, enqueue bool) (AcquireResult, int, error) {
	return s.fairAcquire(ctx, r, rs, name, owner, reqID, lease, allowance, place, now, enqueue, true)
}
