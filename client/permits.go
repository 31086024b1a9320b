package client

import (
	"context"
	"fmt"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// PermitExpirableSemaphore is a handle on a semaphore whose permits each
// have an ID and a lease of their own (Redisson's
// RPermitExpirableSemaphore): a permit not released within its lease
// returns to the semaphore by itself, and its late release fails. A
// permit's lease is 0 (it never expires) or at least MinLease. A handle is
// safe for concurrent use.
type PermitExpirableSemaphore struct {
	c    *Client
	name string
	err  error
}

// PermitExpirableSemaphore returns a handle on the permit-expirable
// semaphore name. A missing semaphore has 0 permits.
func (c *Client) PermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{c: c, name: name, err: validateNameFor(c, messages.KindPermitSemaphore, name)}
}

// Name returns the semaphore's name, its Redis key ("" for a nil handle).
func (p *PermitExpirableSemaphore) Name() string {
	if p == nil {
		return ""
	}
	return p.name
}

func (p *PermitExpirableSemaphore) check() error {
	if p == nil || p.c == nil {
		return invalid("semaphore", "nil handle")
	}
	if p.err != nil {
		return p.err
	}
	return p.c.errClosed()
}

// Acquire takes one permit for lease (0: it never expires), waiting until
// one is available or ctx ends, and returns its ID: 32 hex characters.
func (p *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	if err := checkCtx(ctx); err != nil {
		return "", err
	}
	id, _, err := p.acquire(ctx, lease, time.Time{}, true)
	return id, err
}

// TryAcquire takes one permit for lease (0: it never expires), waiting up
// to wait. It returns "", false and a nil error when wait runs out.
func (p *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, bool, error) {
	if err := checkCtx(ctx); err != nil {
		return "", false, err
	}
	if err := messages.Join(p.check(), validateWait(wait)); err != nil {
		return "", false, err
	}
	return p.acquire(ctx, lease, p.c.opts.clock.Now().Add(wait), false)
}

// AcquirePermits takes permits permits at once, all or none, each for
// lease (0: they never expire), waiting until that many are available or
// ctx ends, and returns their IDs (Redisson's acquire(permits,
// leaseTime)). permits is 1 to 1000 (messages.MaxPermitIDs).
func (p *PermitExpirableSemaphore) AcquirePermits(ctx context.Context, permits int64, lease time.Duration) ([]string, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := messages.Join(p.check(), validatePermitCount(permits)); err != nil {
		return nil, err
	}
	ids, _, err := p.acquireN(ctx, permits, lease, time.Time{}, true)
	return ids, err
}

// TryAcquirePermits takes permits permits at once, all or none, each for
// lease (0: they never expire), waiting up to wait, and returns their IDs
// (Redisson's tryAcquire(permits, waitTime, leaseTime)). It returns nil,
// false and a nil error when wait runs out. permits is 1 to 1000
// (messages.MaxPermitIDs).
func (p *PermitExpirableSemaphore) TryAcquirePermits(ctx context.Context, permits int64, wait, lease time.Duration) ([]string, bool, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, false, err
	}
	if err := messages.Join(p.check(), validatePermitCount(permits), validateWait(wait)); err != nil {
		return nil, false, err
	}
	return p.acquireN(ctx, permits, lease, p.c.opts.clock.Now().Add(wait), false)
}

func (p *PermitExpirableSemaphore) acquire(ctx context.Context, lease time.Duration, deadline time.Time, blocking bool) (string, bool, error) {
	ids, ok, err := p.acquireN(ctx, 1, lease, deadline, blocking)
	if !ok {
		return "", false, err
	}
	return ids[0], true, nil
}

func (p *PermitExpirableSemaphore) acquireN(ctx context.Context, permits int64, lease time.Duration, deadline time.Time, blocking bool) ([]string, bool, error) {
	if err := messages.Join(p.check(), validateLease(lease, true)); err != nil {
		return nil, false, err
	}
	req := &messages.Acquire{Name: p.name, Kind: messages.KindPermitSemaphore, Owner: p.c.id,
		RequestID: p.c.nextRequestID(), Lease: wholeMillis(lease), Deadline: deadline}
	if permits > 1 {
		req.Permits = permits
	}
	r, err := p.c.wait(ctx, req, blocking, func(a *messages.Acquired) {
		// Taken just before the cancel arrived: give the permits back.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
		defer cancel()
		if _, err := p.c.scripts.PermitReleaseMany(c, p.c.rdb, p.name, p.c.nextRequestID(), acquiredIDs(a), p.c.opts.clock.Now()); err != nil {
			p.c.opts.logger.Warn("warden: could not give back permits taken after a cancel", "name", p.name, "err", err)
		}
	})
	if r == nil {
		return nil, false, err
	}
	return acquiredIDs(r), true, nil
}

// acquiredIDs are the IDs of the permits a permit acquire took.
func acquiredIDs(a *messages.Acquired) []string {
	if len(a.PermitIDs) > 0 {
		return a.PermitIDs
	}
	return []string{a.PermitID}
}

// validatePermitCount checks how many permits one permit acquire takes.
func validatePermitCount(n int64) error {
	if n < 1 || n > messages.MaxPermitIDs {
		return invalid("permits", "%d is not between 1 and %d", n, messages.MaxPermitIDs)
	}
	return nil
}

// Release gives the permit back. It returns an error matching ErrNotHeld
// when the permit is unknown, already released, or expired.
func (p *PermitExpirableSemaphore) Release(ctx context.Context, permitID string) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	ok, err := p.TryRelease(ctx, permitID)
	if err == nil && !ok {
		err = fmt.Errorf("%w: permit %s of %s is unknown, released or expired", ErrNotHeld, permitID, p.name)
	}
	return err
}

// TryRelease gives the permit back; it returns false when the permit is
// unknown, already released, or expired.
func (p *PermitExpirableSemaphore) TryRelease(ctx context.Context, permitID string) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(p.check(), validatePermitID(permitID)); err != nil {
		return false, err
	}
	span := p.c.tel.releaseSpan(ctx, meterKind(messages.KindPermitSemaphore), p.name)
	ok, err := p.c.scripts.PermitRelease(ctx, p.c.rdb, p.name, p.c.nextRequestID(), permitID, p.c.opts.clock.Now())
	if err == nil && !ok {
		endRelease(span, ErrNotHeld)
	} else {
		endRelease(span, err)
	}
	return ok, err
}

// ReleasePermits gives several permits back at once, all or none: when
// any of them is unknown, already released or expired, none is released
// and the error matches ErrNotHeld (Redisson's release(List)).
func (p *PermitExpirableSemaphore) ReleasePermits(ctx context.Context, permitIDs ...string) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	n, err := p.TryReleasePermits(ctx, permitIDs...)
	if err == nil && n != len(permitIDs) {
		err = fmt.Errorf("%w: permits %v of %s: not all are held (unknown, released or expired); none was released",
			ErrNotHeld, permitIDs, p.name)
	}
	return err
}

// TryReleasePermits gives several permits back at once, all or none, and
// returns how many it released: len(permitIDs), or 0 when any of them is
// unknown, already released or expired (Redisson's tryRelease(List)). The
// IDs must be distinct, and at least one must be given.
func (p *PermitExpirableSemaphore) TryReleasePermits(ctx context.Context, permitIDs ...string) (int, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := messages.Join(p.check(), validatePermitIDs(permitIDs)); err != nil {
		return 0, err
	}
	span := p.c.tel.releaseSpan(ctx, meterKind(messages.KindPermitSemaphore), p.name)
	n, err := p.c.scripts.PermitReleaseMany(ctx, p.c.rdb, p.name, p.c.nextRequestID(), permitIDs, p.c.opts.clock.Now())
	if err == nil && n == 0 {
		endRelease(span, ErrNotHeld)
	} else {
		endRelease(span, err)
	}
	return n, err
}

// RemainLease returns what is left of a held permit's lease, -1 when the
// permit never expires (Redisson's getLeaseTime). It returns an error
// matching ErrNotHeld when the permit is unknown, already released, or
// expired.
func (p *PermitExpirableSemaphore) RemainLease(ctx context.Context, permitID string) (time.Duration, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := messages.Join(p.check(), validatePermitID(permitID)); err != nil {
		return 0, err
	}
	left, held, err := p.c.scripts.PermitLeaseTime(ctx, p.c.rdb, p.name, permitID, p.c.opts.clock.Now())
	if err == nil && !held {
		err = fmt.Errorf("%w: permit %s of %s is unknown, released or expired", ErrNotHeld, permitID, p.name)
	}
	return left, err
}

// UpdateLease gives a held permit a new lease from now (0: it never
// expires); it returns false when the permit is unknown or expired.
func (p *PermitExpirableSemaphore) UpdateLease(ctx context.Context, permitID string, lease time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(p.check(), validatePermitID(permitID), validateLease(lease, true)); err != nil {
		return false, err
	}
	return p.c.scripts.PermitUpdateLease(ctx, p.c.rdb, p.name, permitID, wholeMillis(lease), p.c.opts.clock.Now())
}

// TrySetPermits sets the number of permits if the semaphore does not exist
// yet; it reports whether it did.
func (p *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, permits int64) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(p.check(), validateCount("permits", permits)); err != nil {
		return false, err
	}
	return p.c.scripts.PermitTrySetPermits(ctx, p.c.rdb, p.name, permits, p.c.opts.clock.Now())
}

// AddPermits adds delta permits, which may be negative and may take the
// count below zero.
func (p *PermitExpirableSemaphore) AddPermits(ctx context.Context, delta int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := p.check(); err != nil || delta == 0 {
		return err
	}
	if delta < -maxCount || delta > maxCount {
		return invalid("permits", "%d is beyond ±2^53", delta)
	}
	_, err := p.c.scripts.PermitAddPermits(ctx, p.c.rdb, p.name, p.c.nextRequestID(), delta, p.c.opts.clock.Now())
	return err
}

// AvailablePermits returns the number of permits available, after
// returning expired ones to the semaphore.
func (p *PermitExpirableSemaphore) AvailablePermits(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := p.check(); err != nil {
		return 0, err
	}
	return p.c.scripts.PermitAvailable(ctx, p.c.rdb, p.name, p.c.opts.clock.Now())
}

// SetPermits sets the number of permits, held ones included: the
// available count moves by the difference, and stays below zero while
// more are held than the new number (Redisson's setPermits). A semaphore
// that does not exist is created with permits available. Waiters that the
// new count can serve are woken.
func (p *PermitExpirableSemaphore) SetPermits(ctx context.Context, permits int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(p.check(), validateCount("permits", permits)); err != nil {
		return err
	}
	_, err := p.c.scripts.PermitSetPermits(ctx, p.c.rdb, p.name, permits, p.c.opts.clock.Now())
	return err
}

// Permits returns the number of permits, available and held together
// (Redisson's getPermits), after returning expired ones to the semaphore;
// 0 when the semaphore does not exist.
func (p *PermitExpirableSemaphore) Permits(ctx context.Context) (int64, error) {
	n, err := p.counts(ctx)
	if err != nil || !n.Exists {
		return 0, err
	}
	return n.Available + n.Held, nil
}

// AcquiredPermits returns the number of permits held, after returning
// expired ones to the semaphore (Redisson's acquiredPermits).
func (p *PermitExpirableSemaphore) AcquiredPermits(ctx context.Context) (int64, error) {
	n, err := p.counts(ctx)
	return n.Held, err
}

func (p *PermitExpirableSemaphore) counts(ctx context.Context) (redisio.PermitCounts, error) {
	if err := checkCtx(ctx); err != nil {
		return redisio.PermitCounts{}, err
	}
	if err := p.check(); err != nil {
		return redisio.PermitCounts{}, err
	}
	return p.c.scripts.PermitCounts(ctx, p.c.rdb, p.name, p.c.opts.clock.Now())
}

// Expire gives the semaphore and its held permits ttl to live (rounded up
// to whole milliseconds, at least 1ms). It reports whether the semaphore
// exists.
func (p *PermitExpirableSemaphore) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	return p.keys().expire(ctx, ttl)
}

// ExpireAt makes the semaphore and its held permits expire at t (a time
// already past deletes them). It reports whether the semaphore exists. t
// must be after the Unix epoch, at most 2^53 ms after it.
func (p *PermitExpirableSemaphore) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	return p.keys().expireAt(ctx, t)
}

// ClearExpire removes the time to live of the semaphore and its held
// permits. It reports whether either had one.
func (p *PermitExpirableSemaphore) ClearExpire(ctx context.Context) (bool, error) {
	return p.keys().clearExpire(ctx)
}

// RemainTTL returns the semaphore's remaining time to live: -1 when it
// has none, -2 when the semaphore does not exist (Redisson's
// remainTimeToLive).
func (p *PermitExpirableSemaphore) RemainTTL(ctx context.Context) (time.Duration, error) {
	return p.keys().remainTTL(ctx)
}

// Delete deletes the semaphore with its held permits; it reports whether
// it existed. Releasing a permit of it afterwards fails as for an expired
// permit.
func (p *PermitExpirableSemaphore) Delete(ctx context.Context) (bool, error) {
	return p.keys().delete(ctx)
}

// keys are the semaphore's keys: its name and its held permits' ZSET.
func (p *PermitExpirableSemaphore) keys() objectKeys {
	if err := p.check(); err != nil {
		return objectKeys{err: err}
	}
	return objectKeys{c: p.c, keys: redisio.PermitKeys(p.name)}
}

// validatePermitIDs checks a list of permit IDs: at least one, each valid,
// no duplicates.
func validatePermitIDs(ids []string) error {
	if len(ids) == 0 {
		return invalid("permit IDs", "none given")
	}
	seen := make(map[string]struct{}, len(ids))
	for i, id := range ids {
		if !redisio.ValidPermitID(id) {
			return invalid("permit IDs", "[%d] %q is not 32 lowercase hex characters", i, id)
		}
		if _, dup := seen[id]; dup {
			return invalid("permit IDs", "[%d] %s is given twice", i, id)
		}
		seen[id] = struct{}{}
	}
	return nil
}

func validatePermitID(id string) error {
	if !redisio.ValidPermitID(id) {
		return invalid("permit ID", "%q is not 32 lowercase hex characters", id)
	}
	return nil
}
