package client

import (
	"context"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Semaphore is a handle on a counting semaphore (Redisson's RSemaphore):
// a number of permits in Redis that any process may take and give back.
// Nobody owns a permit: a release needs no prior acquire, and AddPermits
// may take the count below zero. A handle is safe for concurrent use.
type Semaphore struct {
	c    *Client
	name string
	err  error
}

// Semaphore returns a handle on the semaphore name. A missing semaphore
// has 0 permits. An invalid name is reported by every call on the handle.
func (c *Client) Semaphore(name string) *Semaphore {
	return &Semaphore{c: c, name: name, err: validateNameFor(c, messages.KindSemaphore, name)}
}

// Name returns the semaphore's name, its Redis key ("" for a nil handle).
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

func (s *Semaphore) check() error {
	if s == nil || s.c == nil {
		return invalid("semaphore", "nil handle")
	}
	if s.err != nil {
		return s.err
	}
	return s.c.errClosed()
}

// Acquire takes permits permits, waiting until they are available or ctx
// ends (then the error is ErrNotObtained joined with the context's error).
// Acquiring 0 permits returns at once.
func (s *Semaphore) Acquire(ctx context.Context, permits int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	_, err := s.acquire(ctx, permits, time.Time{}, true)
	return err
}

// TryAcquire takes permits permits, waiting up to wait for them. It
// returns false, with a nil error, when wait runs out.
func (s *Semaphore) TryAcquire(ctx context.Context, permits int64, wait time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(s.check(), validateWait(wait)); err != nil {
		return false, err
	}
	return s.acquire(ctx, permits, s.c.opts.clock.Now().Add(wait), false)
}

func (s *Semaphore) acquire(ctx context.Context, permits int64, deadline time.Time, blocking bool) (bool, error) {
	if err := messages.Join(s.check(), validateCount("permits", permits)); err != nil {
		return false, err
	}
	if permits == 0 {
		return true, nil
	}
	req := &messages.Acquire{Name: s.name, Kind: messages.KindSemaphore, Owner: s.c.id,
		RequestID: s.c.nextRequestID(), Permits: permits, Deadline: deadline}
	r, err := s.c.wait(ctx, req, blocking, func(*messages.Acquired) {
		// Taken just before the cancel arrived: give the permits back.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
		defer cancel()
		if _, err := s.c.scripts.SemaphoreRelease(c, s.c.rdb, s.name, s.c.nextRequestID(), permits); err != nil {
			s.c.opts.logger.Warn("warden: could not give back permits taken after a cancel", "name", s.name, "err", err)
		}
	})
	return r != nil, err
}

// Release gives permits permits back and wakes as many waiters as the new
// count allows. Releasing 0 permits does nothing.
func (s *Semaphore) Release(ctx context.Context, permits int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(s.check(), validateCount("permits", permits)); err != nil || permits == 0 {
		return err
	}
	span := s.c.tel.releaseSpan(ctx, meterKind(messages.KindSemaphore), s.name)
	_, err := s.c.scripts.SemaphoreRelease(ctx, s.c.rdb, s.name, s.c.nextRequestID(), permits)
	endRelease(span, err)
	return err
}

// TrySetPermits sets the number of permits if the semaphore does not exist
// yet; it reports whether it did.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int64) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(s.check(), validateCount("permits", permits)); err != nil {
		return false, err
	}
	return s.c.scripts.SemaphoreTrySetPermits(ctx, s.c.rdb, s.name, permits)
}

// AddPermits adds delta permits, which may be negative and may take the
// count below zero (waiters then wait until releases bring it back).
func (s *Semaphore) AddPermits(ctx context.Context, delta int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := s.check(); err != nil || delta == 0 {
		return err
	}
	if delta < -maxCount || delta > maxCount {
		return invalid("permits", "%d is beyond ±2^53", delta)
	}
	_, err := s.c.scripts.SemaphoreAddPermits(ctx, s.c.rdb, s.name, s.c.nextRequestID(), delta)
	return err
}

// AvailablePermits returns the number of permits available (negative after
// AddPermits took more than there were).
func (s *Semaphore) AvailablePermits(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := s.check(); err != nil {
		return 0, err
	}
	return redisio.SemaphoreAvailable(ctx, s.c.rdb, s.name)
}

// DrainPermits takes every available permit and returns how many there
// were.
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.c.scripts.SemaphoreDrain(ctx, s.c.rdb, s.name)
}

// maxCount bounds permits and counts: the scripts compute in doubles.
const maxCount = 1 << 53

// validateCount checks a count of permits that may be zero, not negative.
func validateCount(field string, n int64) error {
	switch {
	case n < 0:
		return invalid(field, "%d is negative", n)
	case n > maxCount:
		return invalid(field, "%d is more than 2^53", n)
	}
	return nil
}
