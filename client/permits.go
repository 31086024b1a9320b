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
// handle is safe for concurrent use.
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

func (p *PermitExpirableSemaphore) acquire(ctx context.Context, lease time.Duration, deadline time.Time, blocking bool) (string, bool, error) {
	if err := messages.Join(p.check(), validateLease(lease, true)); err != nil {
		return "", false, err
	}
	req := &messages.Acquire{Name: p.name, Kind: messages.KindPermitSemaphore, Owner: p.c.id,
		RequestID: p.c.nextRequestID(), Lease: wholeMillis(lease), Deadline: deadline}
	r, err := p.c.wait(ctx, req, blocking, func(a *messages.Acquired) {
		// Taken just before the cancel arrived: give the permit back.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
		defer cancel()
		if _, err := p.c.scripts.PermitRelease(c, p.c.rdb, p.name, p.c.nextRequestID(), a.PermitID, p.c.opts.clock.Now()); err != nil {
			p.c.opts.logger.Warn("warden: could not give back a permit taken after a cancel", "name", p.name, "err", err)
		}
	})
	if r == nil {
		return "", false, err
	}
	return r.PermitID, true, nil
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

func validatePermitID(id string) error {
	if !redisio.ValidPermitID(id) {
		return invalid("permit ID", "%q is not 32 lowercase hex characters", id)
	}
	return nil
}
