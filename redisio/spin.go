package redisio

import (
	"context"
	"time"
)

// The spin lock (Redisson's RedissonSpinLock) keeps the reentrant lock's
// hash and acquires with its script (AcquireWith); its waiters
// poll instead of listening on a channel, so none of its scripts publishes
// anything.

// noPublish is the publish command argument of the spin lock's scripts:
// they publish nothing.
const noPublish = "none"

// SpinUnlockSynced releases one hold of owner's spin lock, as
// UnlockSynced does a reentrant lock's, but publishes nothing when the
// lock is freed.
func (s *Scripts) SpinUnlockSynced(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (remaining int, held bool, acks int, err error) {
	return s.unlockSynced(ctx, r, rs, "unlock spin lock", s.LockArgs(name), owner, reqID, lease, noPublish)
}

// SpinUndoAcquire is UndoAcquire for a spin lock: it publishes nothing.
func (s *Scripts) SpinUndoAcquire(ctx context.Context, r Redis, name, owner, reqID string) (bool, error) {
	return runFlag(ctx, r, undoAcquireScript, "undo acquire of spin lock", name, []string{name, LockChannel(name)},
		owner, reqID, noPublish, UnlockMessage, AcquireRecordField(owner))
}

// SpinForceUnlock deletes a spin lock whoever holds it, publishing
// nothing; it reports whether it existed.
func (s *Scripts) SpinForceUnlock(ctx context.Context, r Redis, name string) (bool, error) {
	return runFlag(ctx, r, forceUnlockScript, "force unlock spin lock", name, []string{name, LockChannel(name)}, UnlockMessage, noPublish)
}
