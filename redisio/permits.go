package redisio

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

var (
	permitAcquireScript       = newScript("permit_lib", "permit_acquire")
	permitUndoAcquireScript   = newScript("permit_lib", "permit_undoacquire")
	permitReleaseScript       = newScript("permit_lib", "permit_release")
	permitUpdateLeaseScript   = newScript("permit_lib", "permit_updatelease")
	permitTrySetPermitsScript = newScript("permit_lib", "permit_trysetpermits")
	permitAddPermitsScript    = newScript("permit_lib", "permit_addpermits")
	permitAvailableScript     = newScript("permit_lib", "permit_available")
	permitSetPermitsScript    = newScript("permit_lib", "permit_setpermits")
	permitCountsScript        = newScript("permit_lib", "permit_counts")
	permitLeaseTimeScript     = newScript("permit_lib", "permit_leasetime")
	permitReleaseManyScript   = newScript("permit_lib", "permit_releasemany")
)

// permitNoExpiry is the lease end Redisson stores for a permit that never
// expires (RedissonPermitExpirableSemaphore.nonExpirableTimeout).
const permitNoExpiry = 922337203685477

// permitIDBytes is the size of a permit ID: 16 random bytes, written as 32
// lowercase hex characters (Redisson's ServiceManager.generateId).
const permitIDBytes = 16

// PermitTimeoutKey is the ZSET of a permit-expirable semaphore's held
// permits, permit ID -> lease end in unix ms: {name}:timeout, or
// name:timeout when the name already carries a hash tag (Redisson's
// suffixName). Members are the IDs' 16 raw bytes, as Redisson stores them.
func PermitTimeoutKey(name string) string {
	lb, rb := hashTag(name)
	return lb + name + rb + ":timeout"
}

// PermitSpentKey marks a permit ID released or undone for the retry window,
// so that an acquire with it that reaches Redis late takes nothing:
// warden_latch:{name}:permit:<permitID>.
func PermitSpentKey(name, permitID string) string {
	return OpLatchKey(name, "permit:"+permitID)
}

// NewPermitID returns a fresh permit ID: 16 random bytes from crypto/rand
// as 32 lowercase hex characters, Redisson's format.
func NewPermitID() string {
	b := make([]byte, permitIDBytes)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// ValidPermitID reports whether id is a permit ID: 32 lowercase hex
// characters.
func ValidPermitID(id string) bool {
	if len(id) != 2*permitIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// permitMember is permitID as stored in the ZSET: its raw bytes.
func permitMember(permitID string) (string, error) {
	if !ValidPermitID(permitID) {
		return "", fmt.Errorf("warden: invalid permit id %q: want 32 lowercase hex characters", permitID)
	}
	b, _ := hex.DecodeString(permitID) // valid hex: checked above
	return string(b), nil
}

// permitLease renders a lease for a script: "0" for never expires, else
// whole ms, at least 1.
func permitLease(lease time.Duration) (string, error) {
	switch {
	case lease < 0:
		return "", fmt.Errorf("warden: invalid lease %v: want 0 (never expires) or more", lease)
	case lease == 0:
		return "0", nil
	}
	return Millis(lease), nil
}

// PermitResult is the outcome of one permit acquire attempt.
type PermitResult struct {
	// Acquired reports that PermitID is held (also when it already was).
	Acquired bool
	// PermitID is the held permit's ID when Acquired, else empty; the
	// first of PermitIDs when the acquire took several.
	PermitID string
	// PermitIDs, when Acquired by PermitAcquireMany with more than one
	// ID, are the held permits' IDs; else nil.
	PermitIDs []string
	// Available is the count after acquiring, or the current count when
	// refused.
	Available int64
	// NextExpiry, when refused, is the time until the earliest held
	// permit's lease ends; 0 when no held permit expires (wait for a
	// message).
	NextExpiry time.Duration
}

// PermitAcquire acquires one permit of a permit-expirable semaphore under
// permitID (from NewPermitID) with its own lease; lease 0 means the permit
// never expires (stored with Redisson's never-expires score). Expired
// permits are reclaimed first. It is idempotent by permitID: an ID already
// held is acquired again without taking another permit. An ID that was
// released or undone is refused with an error. rs asks for replica
// acknowledgement; the int is how many replicas acknowledged.
func (s *Scripts) PermitAcquire(ctx context.Context, r Redis, rs ReplicaSync, name, permitID string, lease time.Duration, now time.Time) (PermitResult, int, error) {
	return s.PermitAcquireMany(ctx, r, rs, name, []string{permitID}, lease, now)
}

// PermitAcquireMany is PermitAcquire for several permits at once, one per
// ID of permitIDs (at least one, all distinct), all or none (Redisson's
// acquire(permits)), each with the same lease. It is idempotent by the
// IDs: when all are held, it acquires nothing more and reports them held.
func (s *Scripts) PermitAcquireMany(ctx context.Context, r Redis, rs ReplicaSync, name string, permitIDs []string, lease time.Duration, now time.Time) (PermitResult, int, error) {
	leaseArg, err := permitLease(lease)
	if err != nil {
		return PermitResult{}, 0, fmt.Errorf("warden: permit acquire %s: %w", name, err)
	}
	keys, members, err := permitKeysAndMembers(name, permitIDs)
	if err != nil {
		return PermitResult{}, 0, fmt.Errorf("warden: permit acquire %s: %w", name, err)
	}
	args := append([]any{members[0], leaseArg, UnixMillis(now), s.publish}, members[1:]...)
	c, acks, err := runSynced(ctx, r, rs, permitAcquireScript, keys, args...)
	if err != nil {
		return PermitResult{}, 0, fmt.Errorf("warden: permit acquire %s: %w", name, err)
	}
	v, err := semInts(c, 3)
	if err != nil {
		return PermitResult{}, 0, fmt.Errorf("warden: permit acquire %s: %w", name, err)
	}
	if v[0] == 1 {
		res := PermitResult{Acquired: true, PermitID: permitIDs[0], Available: v[1]}
		if len(permitIDs) > 1 {
			res.PermitIDs = permitIDs
		}
		return res, int(acks), nil
	}
	return PermitResult{Available: v[1], NextExpiry: time.Duration(v[2]) * time.Millisecond}, int(acks), nil
}

// permitKeysAndMembers are the keys of a script on permitIDs' permits
// (the name, its held permits, its channel, and one spent marker per ID)
// and the IDs as stored, their raw bytes.
func permitKeysAndMembers(name string, permitIDs []string) ([]string, []any, error) {
	if len(permitIDs) == 0 {
		return nil, nil, fmt.Errorf("no permit ids")
	}
	keys := make([]string, 0, 3+len(permitIDs))
	keys = append(keys, name, PermitTimeoutKey(name), SemaphoreChannel(name))
	members := make([]any, len(permitIDs))
	for i, id := range permitIDs {
		m, err := permitMember(id)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, PermitSpentKey(name, id))
		members[i] = m
	}
	return keys, members, nil
}

// PermitUndoAcquire gives back permitID's permit if it is held (the new
// count is published) and reports whether it did. Afterwards permitID is
// spent for the retry window: an acquire with it that reaches Redis late
// takes nothing.
func (s *Scripts) PermitUndoAcquire(ctx context.Context, r Redis, name, permitID string, now time.Time) (bool, error) {
	return s.PermitUndoAcquireMany(ctx, r, name, []string{permitID}, now)
}

// PermitUndoAcquireMany is PermitUndoAcquire for the IDs of one
// PermitAcquireMany: it gives back those held, and spends them all.
func (s *Scripts) PermitUndoAcquireMany(ctx context.Context, r Redis, name string, permitIDs []string, now time.Time) (bool, error) {
	keys, members, err := permitKeysAndMembers(name, permitIDs)
	if err != nil {
		return false, fmt.Errorf("warden: permit undo acquire %s: %w", name, err)
	}
	args := append([]any{members[0], UnixMillis(now), s.publish, Millis(LatchTTL)}, members[1:]...)
	return runFlag(ctx, r, permitUndoAcquireScript, "permit undo acquire", name, keys, args...)
}

// PermitRelease releases permitID's permit and publishes the new count. It
// returns false when the permit is unknown or its lease ended (Redisson's
// tryRelease). It is applied once per reqID: a repeat returns the first
// result.
func (s *Scripts) PermitRelease(ctx context.Context, r Redis, name, reqID, permitID string, now time.Time) (bool, error) {
	member, err := permitMember(permitID)
	if err != nil {
		return false, fmt.Errorf("warden: permit release %s: %w", name, err)
	}
	return runFlag(ctx, r, permitReleaseScript, "permit release", name,
		[]string{name, PermitTimeoutKey(name), SemaphoreChannel(name), OpLatchKey(name, reqID), PermitSpentKey(name, permitID)},
		member, UnixMillis(now), s.publish, Millis(LatchTTL))
}

// PermitUpdateLease sets permitID's lease to lease from now (0: never
// expires). It returns false when the permit is unknown, released or
// expired.
func (s *Scripts) PermitUpdateLease(ctx context.Context, r Redis, name, permitID string, lease time.Duration, now time.Time) (bool, error) {
	member, err := permitMember(permitID)
	if err != nil {
		return false, fmt.Errorf("warden: permit update lease %s: %w", name, err)
	}
	leaseArg, err := permitLease(lease)
	if err != nil {
		return false, fmt.Errorf("warden: permit update lease %s: %w", name, err)
	}
	return runFlag(ctx, r, permitUpdateLeaseScript, "permit update lease", name, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		member, leaseArg, UnixMillis(now), s.publish)
}

// PermitTrySetPermits sets the permit-expirable semaphore to permits (at
// least 0) if it does not exist, and then publishes the count. It reports
// whether it set it.
func (s *Scripts) PermitTrySetPermits(ctx context.Context, r Redis, name string, permits int64, now time.Time) (bool, error) {
	return runFlag(ctx, r, permitTrySetPermitsScript, "permit try set permits", name, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		strconv.FormatInt(permits, 10), UnixMillis(now), s.publish)
}

// PermitAddPermits adds delta permits (negative removes them; the count may
// go negative) and returns the new count, published when it is above 0. It
// is applied once per reqID: a repeat returns the first result.
func (s *Scripts) PermitAddPermits(ctx context.Context, r Redis, name, reqID string, delta int64, now time.Time) (int64, error) {
	return runInt(ctx, r, permitAddPermitsScript, "permit add permits", name,
		[]string{name, PermitTimeoutKey(name), SemaphoreChannel(name), OpLatchKey(name, reqID)},
		strconv.FormatInt(delta, 10), UnixMillis(now), s.publish, Millis(LatchTTL))
}

// PermitAvailable returns the available permits (0 when the semaphore does
// not exist) after reclaiming expired ones, which makes it a write.
func (s *Scripts) PermitAvailable(ctx context.Context, r Redis, name string, now time.Time) (int64, error) {
	return runInt(ctx, r, permitAvailableScript, "permit available", name, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		UnixMillis(now), s.publish)
}

// PermitSetPermits sets the permit-expirable semaphore's number of permits,
// held ones included, to permits (at least 0): the available count moves by
// the difference, and may go negative when more are held (Redisson's
// setPermits). A missing semaphore is set to permits. Expired permits are
// reclaimed first. It returns the available count after, published when
// it changed and is above 0. Setting is idempotent: a retry sets the same
// number.
func (s *Scripts) PermitSetPermits(ctx context.Context, r Redis, name string, permits int64, now time.Time) (int64, error) {
	return runInt(ctx, r, permitSetPermitsScript, "permit set permits", name, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		strconv.FormatInt(permits, 10), UnixMillis(now), s.publish)
}

// PermitCounts are a permit-expirable semaphore's counts.
type PermitCounts struct {
	// Exists reports that the semaphore's count exists.
	Exists bool
	// Available is the available count, 0 when the semaphore is absent.
	Available int64
	// Held is how many permits are held (acquired, their lease not ended).
	Held int64
}

// PermitCounts reads the semaphore's counts after reclaiming expired
// permits, which makes it a write.
func (s *Scripts) PermitCounts(ctx context.Context, r Redis, name string, now time.Time) (PermitCounts, error) {
	c := permitCountsScript.Run(ctx, r, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		UnixMillis(now), s.publish)
	v, err := semInts(c, 3)
	if err != nil {
		return PermitCounts{}, fmt.Errorf("warden: permit counts %s: %w", name, err)
	}
	return PermitCounts{Exists: v[0] == 1, Available: v[1], Held: v[2]}, nil
}

// PermitLeaseTime returns what is left of permitID's lease (Redisson's
// getLeaseTime), after reclaiming expired permits: -1 when the permit never
// expires; held is false when the permit is not held (unknown, released or
// expired).
func (s *Scripts) PermitLeaseTime(ctx context.Context, r Redis, name, permitID string, now time.Time) (left time.Duration, held bool, err error) {
	member, err := permitMember(permitID)
	if err != nil {
		return 0, false, fmt.Errorf("warden: permit lease time %s: %w", name, err)
	}
	n, err := permitLeaseTimeScript.Run(ctx, r, []string{name, PermitTimeoutKey(name), SemaphoreChannel(name)},
		member, UnixMillis(now), s.publish).Int64()
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("warden: permit lease time %s: %w", name, err)
	case n == -2:
		return 0, false, nil
	case n == -1:
		return -1, true, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// PermitReleaseMany releases the permits of permitIDs (at least one, no
// duplicates) all or none, as Redisson's tryRelease(List): when any of them
// is not held, it releases none and returns 0; else it reclaims expired
// permits, releases them, publishes the new count and returns how many it
// released. Every ID is marked spent. It is applied once per reqID: a
// repeat returns the first result.
func (s *Scripts) PermitReleaseMany(ctx context.Context, r Redis, name, reqID string, permitIDs []string, now time.Time) (int, error) {
	if len(permitIDs) == 0 {
		return 0, fmt.Errorf("warden: permit release %s: no permit ids", name)
	}
	keys := make([]string, 0, 4+len(permitIDs))
	keys = append(keys, name, PermitTimeoutKey(name), SemaphoreChannel(name), OpLatchKey(name, reqID))
	args := make([]any, 0, 3+len(permitIDs))
	args = append(args, UnixMillis(now), s.publish, Millis(LatchTTL))
	for _, id := range permitIDs {
		member, err := permitMember(id)
		if err != nil {
			return 0, fmt.Errorf("warden: permit release %s: %w", name, err)
		}
		keys = append(keys, PermitSpentKey(name, id))
		args = append(args, member)
	}
	n, err := runInt(ctx, r, permitReleaseManyScript, "permit release", name, keys, args...)
	return int(n), err
}

// PermitKeys are the keys of a permit-expirable semaphore, for Expire,
// ClearExpire and Delete: the name and its held permits.
func PermitKeys(name string) []string {
	return []string{name, PermitTimeoutKey(name)}
}
