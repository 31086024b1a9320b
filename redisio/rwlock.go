package redisio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Read/write lock layout (Redisson's RedissonReadLock/RedissonWriteLock):
// one hash at name with field mode = "read" | "write"; a reader's field is
// its owner (read hold count); the write holder's field is WriteField(owner)
// (write hold count). Read hold k of an owner has its own timeout key
// ReadTimeoutPrefix(name, owner)+":k" whose PX is that hold's lease.

var (
	rwReadAcquireScript  = newScript("hold_lib", "rw_read_acquire")
	rwWriteAcquireScript = newScript("hold_lib", "rw_write_acquire")
	rwReadUnlockScript   = newScript("rw_lib", "rw_read_unlock")
	rwWriteUnlockScript  = newScript("rw_lib", "rw_write_unlock")
	rwReadUndoScript     = newScript("rw_lib", "rw_read_undo")
	rwWriteUndoScript    = newScript("rw_lib", "rw_write_undo")
	rwForceUnlockScript  = newScript("rw_forceunlock")
	rwReadLockedScript   = newScript("rw_read_locked")
)

// RWUnlockMessage is published on RWChannel when a read unlock frees the
// lock; it wakes one waiter (Redisson's LockPubSub.UNLOCK_MESSAGE).
const RWUnlockMessage = "0"

// RWReadUnlockMessage is published on RWChannel when a write unlock frees
// the lock; it wakes every waiter, readers and writers (Redisson's
// LockPubSub.READ_UNLOCK_MESSAGE).
const RWReadUnlockMessage = "1"

// RWChannel is the pub/sub channel both sides of a read/write lock publish
// their unlocks on: redisson_rwlock:{name}.
func RWChannel(name string) string {
	return prefixName("redisson_rwlock", name)
}

// WriteField is the hash field of the write holder owner: "<owner>:write".
func WriteField(owner string) string {
	return owner + ":write"
}

// rwKeyPrefix is what Redisson's suffixName puts in front of a suffix:
// "{name}", or name itself when it already carries a "{".
func rwKeyPrefix(name string) string {
	lb, rb := hashTag(name)
	return lb + name + rb
}

// ReadTimeoutPrefix is the prefix of owner's read-hold timeout keys:
// {name}:<owner>:rwlock_timeout (name:<owner>:rwlock_timeout when name has
// a "{"). Read hold k (1..count) has the key <prefix>:<k>, a STRING whose
// PX is that hold's lease.
func ReadTimeoutPrefix(name, owner string) string {
	return rwKeyPrefix(name) + ":" + owner + ":rwlock_timeout"
}

// ReadAcquire runs one read-lock acquire attempt for owner with request ID
// reqID, followed by WAIT for rs.Replicas on the same connection. It is
// acquirable when the lock is free, in read mode, or in write mode held by
// owner (downgrade). A repeated reqID returns owner's current read hold
// count and writes nothing. It returns how many replicas acknowledged.
func (s *Scripts) ReadAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (AcquireResult, int, error) {
	c, acks, err := runSynced(ctx, r, rs, rwReadAcquireScript,
		[]string{name, AcquireLatchKey(name, owner), ReadTimeoutPrefix(name, owner)},
		owner, Millis(lease), reqID, Millis(LatchTTL))
	if err != nil {
		return AcquireResult{}, 0, fmt.Errorf("warden: read acquire %s: %w", name, err)
	}
	res, err := acquireReply("read acquire", name, c)
	if err != nil {
		return AcquireResult{}, 0, err
	}
	return res, int(acks), nil
}

// WriteAcquire runs one write-lock acquire attempt for owner with request
// ID reqID, followed by WAIT for rs.Replicas on the same connection. It is
// acquirable when the lock is free, or reentrant when owner holds the write
// (the reentry adds lease to the remaining TTL, as Redisson). A reader,
// owner included, never gets the write. A repeated reqID returns the
// current write hold count and writes nothing.
func (s *Scripts) WriteAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (AcquireResult, int, error) {
	c, acks, err := runSynced(ctx, r, rs, rwWriteAcquireScript,
		[]string{name, AcquireLatchKey(name, WriteField(owner))},
		WriteField(owner), Millis(lease), reqID, Millis(LatchTTL))
	if err != nil {
		return AcquireResult{}, 0, fmt.Errorf("warden: write acquire %s: %w", name, err)
	}
	res, err := acquireReply("write acquire", name, c)
	if err != nil {
		return AcquireResult{}, 0, err
	}
	return res, int(acks), nil
}

// ReadUnlock releases owner's last read hold, followed by WAIT for
// rs.Replicas. It returns owner's remaining read hold count, and held=false
// when owner held no read (also when the lock is gone, where Redisson
// reports success). The lock then lives as long as its longest surviving
// read hold; when none survives and no writer holds it, it is deleted and
// RWUnlockMessage published. lease is not used: a read unlock never sets
// the TTL to a lease but recomputes it from the surviving holds. A repeated
// reqID returns the first result.
func (s *Scripts) ReadUnlock(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (remaining int, held bool, acks int, err error) {
	c, n, err := runSynced(ctx, r, rs, rwReadUnlockScript,
		[]string{name, RWChannel(name), UnlockRecordKey(name, s.token+readRecord), AcquireLatchKey(name, owner),
			ReadTimeoutPrefix(name, owner), rwKeyPrefix(name)},
		RWUnlockMessage, owner, s.publish, latchTTLArg, s.seq.Add(1), reqID)
	if err != nil {
		return 0, false, 0, fmt.Errorf("warden: read unlock %s: %w", name, err)
	}
	remaining, held, err = unlockReply("read unlock", name, c)
	if err != nil {
		return 0, false, 0, err
	}
	return remaining, held, int(n), nil
}

// WriteUnlock releases one of owner's write holds, followed by WAIT for
// rs.Replicas. It returns the remaining write hold count, and held=false
// when the lock is not write-held by owner (also when it is gone, where
// Redisson reports success). A still-held lock's TTL is set to lease, but
// never below its longest read hold (owner may also read, each read hold
// with its own lease). At 0 the lock becomes read mode when owner still
// holds reads, else it is deleted; either way RWReadUnlockMessage is
// published (after a downgrade, waiting readers may share the lock). A
// repeated reqID returns the first result.
func (s *Scripts) WriteUnlock(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (remaining int, held bool, acks int, err error) {
	field := WriteField(owner)
	c, n, err := runSynced(ctx, r, rs, rwWriteUnlockScript,
		[]string{name, RWChannel(name), UnlockRecordKey(name, s.token+writeRecord), AcquireLatchKey(name, field), rwKeyPrefix(name)},
		RWReadUnlockMessage, Millis(lease), field, s.publish, latchTTLArg, s.seq.Add(1), reqID)
	if err != nil {
		return 0, false, 0, fmt.Errorf("warden: write unlock %s: %w", name, err)
	}
	remaining, held, err = unlockReply("write unlock", name, c)
	if err != nil {
		return 0, false, 0, err
	}
	return remaining, held, int(n), nil
}

// ReadUndoAcquire reverses the read acquire with request ID reqID if, and
// only if, Redis applied it and it is owner's last applied read acquire: it
// removes that hold and its timeout key and settles the lock's TTL (or
// frees it and publishes) as ReadUnlock would. It reports whether it undid
// anything.
func (s *Scripts) ReadUndoAcquire(ctx context.Context, r Redis, name, owner, reqID string) (bool, error) {
	return runFlag(ctx, r, rwReadUndoScript, "read undo acquire", name,
		[]string{name, AcquireLatchKey(name, owner), RWChannel(name), ReadTimeoutPrefix(name, owner), rwKeyPrefix(name)},
		owner, reqID, s.publish, RWUnlockMessage)
}

// WriteUndoAcquire reverses the write acquire with request ID reqID if, and
// only if, Redis applied it and it is owner's last applied write acquire:
// it removes that write hold (at 0 downgrading to read mode or freeing the
// lock, and publishing, as WriteUnlock would). It reports whether it undid
// anything.
func (s *Scripts) WriteUndoAcquire(ctx context.Context, r Redis, name, owner, reqID string) (bool, error) {
	field := WriteField(owner)
	return runFlag(ctx, r, rwWriteUndoScript, "write undo acquire", name,
		[]string{name, AcquireLatchKey(name, field), RWChannel(name)},
		field, reqID, s.publish, RWReadUnlockMessage)
}

// ReadForceUnlock deletes the lock whoever holds it, but only when it is in
// read mode, and publishes RWUnlockMessage. It reports whether it deleted.
func (s *Scripts) ReadForceUnlock(ctx context.Context, r Redis, name string) (bool, error) {
	return s.rwForceUnlock(ctx, r, name, "read", RWUnlockMessage)
}

// WriteForceUnlock deletes the lock whoever holds it, but only when it is
// in write mode, and publishes RWReadUnlockMessage. It reports whether it
// deleted.
func (s *Scripts) WriteForceUnlock(ctx context.Context, r Redis, name string) (bool, error) {
	return s.rwForceUnlock(ctx, r, name, "write", RWReadUnlockMessage)
}

func (s *Scripts) rwForceUnlock(ctx context.Context, r Redis, name, mode, msg string) (bool, error) {
	return runFlag(ctx, r, rwForceUnlockScript, mode+" force unlock", name, []string{name, RWChannel(name)}, mode, msg, s.publish)
}

// ReadIsLocked reports whether the read side is held: the lock is in read
// mode, or in write mode and the write holder also holds reads.
func ReadIsLocked(ctx context.Context, r Redis, name string) (bool, error) {
	return runFlag(ctx, r, rwReadLockedScript, "read is locked", name, []string{name})
}

// WriteIsLocked reports whether the lock is in write mode.
func WriteIsLocked(ctx context.Context, r Redis, name string) (bool, error) {
	mode, err := r.HGet(ctx, name, "mode").Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("warden: write is locked %s: %w", name, err)
	}
	return mode == "write", nil
}

// ReadHoldCount returns owner's read hold count, 0 when it holds none.
func ReadHoldCount(ctx context.Context, r Redis, name, owner string) (int, error) {
	return HoldCount(ctx, r, name, owner)
}

// WriteHoldCount returns owner's write hold count, 0 when it holds none.
func WriteHoldCount(ctx context.Context, r Redis, name, owner string) (int, error) {
	return HoldCount(ctx, r, name, WriteField(owner))
}
