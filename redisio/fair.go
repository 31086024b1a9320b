package redisio

import (
	"context"
	"fmt"
	"time"
)

// The fair lock's scripts. Each drops stale places (deadline <= now)
// before anything else, as Redisson's RedissonFairLock drops stale heads;
// now is always the caller's clock, never Redis's.
var (
	fairAcquireScript     = newScript("hold_lib", "fair_lib", "fair_acquire")
	fairUnlockScript      = newScript("fair_lib", "fair_unlock")
	fairUndoScript        = newScript("hold_lib", "fair_lib", "fair_undo")
	fairForceUnlockScript = newScript("fair_lib", "fair_forceunlock")
	fairCancelScript      = newScript("fair_lib", "fair_cancel")
)

// FairQueueKey is the fair lock's FIFO of waiting owners (a LIST):
// redisson_lock_queue:{name}.
func FairQueueKey(name string) string {
	return prefixName("redisson_lock_queue", name)
}

// FairTimeoutKey is the fair lock's waiter deadlines (a ZSET owner ->
// absolute unix ms): redisson_lock_timeout:{name}.
func FairTimeoutKey(name string) string {
	return prefixName("redisson_lock_timeout", name)
}

// FairPlacesKey is warden's record of the refreshed places in the fair
// lock's queue (a HASH owner -> absolute unix ms deadline):
// warden_fair_places:{name}. A place in it lapses at that deadline, which
// its waiter's engine pushes forward while it waits; a place not in it (a
// Redisson client's) lapses at its score in FairTimeoutKey.
func FairPlacesKey(name string) string {
	return prefixName("warden_fair_places", name)
}

// FairChannel is the pub/sub channel one fair-lock waiter listens on; an
// unlock publishes "0" only on the head waiter's:
// redisson_lock__channel:{name}:<owner>.
func FairChannel(name, owner string) string {
	return LockChannel(name) + ":" + owner
}

// fairKeys are the keys every fair script starts with: the lock, its queue,
// its deadlines and its unlock channel (the prefix of each waiter's own).
func fairKeys(name string) []string {
	return []string{name, FairQueueKey(name), FairTimeoutKey(name), LockChannel(name)}
}

// FairAcquire runs one fair acquire attempt for owner with request ID reqID,
// then WAIT for rs.Replicas on the same connection; it returns how many
// replicas acknowledged. Queued waiters whose deadline passed (<= now) are
// dropped first, wherever they stand. The lock is free for owner when it is
// absent and the queue is empty or owner is its head; reentry is as in
// AcquireWith, and a repeated reqID that acquired returns its first result.
// When refused and enqueue is true, owner joins the queue (once); PTTL is
// then the time until the previous tail's deadline, or the lock's PTTL.
// With enqueue false the queue is never touched.
//
// With place > 0 owner's place is a refreshed one: its deadline is now +
// place when it joins and again at each later attempt while it is queued,
// so it lapses only once its attempts stop; no other waiter's coming or
// going moves it (see scripts/fair_lib.lua). With place 0 it is a place as
// Redisson writes it: deadline = the previous tail's deadline, or now + the
// lock's PTTL, plus allowance, never refreshed; when such a waiter takes the
// lock from the head of the queue, the deadlines behind it that are not
// refreshed move forward by allowance.
func (s *Scripts) FairAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string,
	lease, allowance, place time.Duration, now time.Time, enqueue bool) (AcquireResult, int, error) {
	return s.fairAcquire(ctx, r, rs, name, owner, reqID, lease, allowance, place, now, enqueue, false)
}

// fairAcquire is FairAcquire, refusing the holder's reentry when
// nonReentrant.
func (s *Scripts) fairAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string,
	lease, allowance, place time.Duration, now time.Time, enqueue, nonReentrant bool) (AcquireResult, int, error) {
	keys, args := fairAcquireArgs(name, owner, reqID, lease, allowance, place, now, enqueue, nonReentrant)
	c, acks, err := runSynced(ctx, r, rs, fairAcquireScript, keys, args...)
	if err != nil {
		return AcquireResult{}, 0, fmt.Errorf("warden: fair acquire %s: %w", name, err)
	}
	res, err := acquireReply("fair acquire", name, c)
	return res, int(acks), err
}

// fairAcquireArgs are the keys and arguments of one fair acquire (see
// FairAcquire).
func fairAcquireArgs(name, owner, reqID string, lease, allowance, place time.Duration, now time.Time,
	enqueue, nonReentrant bool) ([]string, []any) {
	flag := "0"
	if enqueue {
		flag = "1"
	}
	placeArg := "0"
	if place > 0 {
		placeArg = Millis(place)
	}
	args := []any{owner, Millis(lease), reqID, Millis(LatchTTL), Millis(allowance), UnixMillis(now), flag, placeArg}
	if nonReentrant {
		args = append(args, nonReentrantArg)
	}
	return []string{name, FairQueueKey(name), FairTimeoutKey(name), AcquireLatchKey(name, owner), GaveUpKey(name, owner),
		FairPlacesKey(name)}, args
}

// FairUnlock releases one hold of owner's fair lock, then WAIT for
// rs.Replicas on the same connection. It returns the remaining hold count,
// held=false when another owner holds the lock, and the replica acks. When
// the count reaches 0 the lock is deleted and "0" is published on the head
// waiter's own channel only (FairChannel). A lock that already expired
// counts as released (remaining 0, held true), as in Redisson. lease is the
// TTL a lock that stays held is refreshed to. A repeated reqID returns the
// first result.
func (s *Scripts) FairUnlock(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string,
	lease time.Duration, now time.Time) (remaining int, held bool, acks int, err error) {
	keys, args := s.fairUnlockArgs(name, owner, reqID, lease, now)
	c, n, err := runSynced(ctx, r, rs, fairUnlockScript, keys, args...)
	if err != nil {
		return 0, false, 0, fmt.Errorf("warden: fair unlock %s: %w", name, err)
	}
	remaining, held, err = unlockReply("fair unlock", name, c)
	return remaining, held, int(n), err
}

// fairUnlockArgs are the keys and arguments of one fair unlock (see
// FairUnlock).
func (s *Scripts) fairUnlockArgs(name, owner, reqID string, lease time.Duration, now time.Time) ([]string, []any) {
	// The fair lock excludes as the reentrant lock does: it shares its
	// unlock record (see UnlockRecordKey).
	keys := append(fairKeys(name), UnlockRecordKey(name, s.token), AcquireLatchKey(name, owner), FairPlacesKey(name))
	return keys, []any{owner, Millis(lease), UnixMillis(now), s.publish, latchTTLArg, s.seq.Add(1), reqID}
}

// FairUndoAcquire reverses the fair acquire with request ID reqID if, and
// only if, Redis applied it (one hold released; a lock left empty is
// deleted and its head waiter woken), and reports whether it undid a hold.
// When the acquire was not applied it makes sure owner is not left in the
// queue (a refused, enqueuing attempt whose reply was lost): owner leaves
// as in FairCancelWait, the deadlines behind it moving forward by the
// allowance it queued with, which the script reads off the deadlines (see
// scripts/fair_undo.lua).
func (s *Scripts) FairUndoAcquire(ctx context.Context, r Redis, name, owner, reqID string, now time.Time) (bool, error) {
	keys := append(fairKeys(name), AcquireLatchKey(name, owner), FairPlacesKey(name))
	return runFlag(ctx, r, fairUndoScript, "fair undo acquire", name, keys, owner, reqID, UnixMillis(now), s.publish)
}

// FairForceUnlock deletes the fair lock whoever holds it, wakes the head
// waiter if it existed, and reports whether it existed. Stale places are
// dropped first.
func (s *Scripts) FairForceUnlock(ctx context.Context, r Redis, name string, now time.Time) (bool, error) {
	return runFlag(ctx, r, fairForceUnlockScript, "fair force unlock", name, append(fairKeys(name), FairPlacesKey(name)), UnixMillis(now), s.publish)
}

// FairCancelWait removes owner, a waiter that gives up, from the queue and
// its deadline; when its place was not a refreshed one, it pulls every
// deadline behind it that is not refreshed forward by allowance.
// When that changes the head of a free lock, the new head is woken on its
// own channel.
func (s *Scripts) FairCancelWait(ctx context.Context, r Redis, name, owner, reqID string, allowance time.Duration, now time.Time) error {
	err := fairCancelScript.Run(ctx, r, append(fairKeys(name), GaveUpKey(name, owner), FairPlacesKey(name)), owner, Millis(allowance),
		UnixMillis(now), s.publish, reqID, Millis(LatchTTL)).Err()
	if err != nil {
		return fmt.Errorf("warden: fair cancel wait %s: %w", name, err)
	}
	return nil
}
