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

// TrySetPermitsTTL sets the number of permits if the semaphore does not
// exist yet, and gives it ttl to live (rounded up to whole milliseconds,
// at least 1ms): once it expires, the semaphore is gone with its permits,
// as if it had never been set. It reports whether it set it (Redisson's
// trySetPermits(permits, timeToLive)).
func (s *Semaphore) TrySetPermitsTTL(ctx context.Context, permits int64, ttl time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(s.check(), validateCount("permits", permits), validateTTL(ttl)); err != nil {
		return false, err
	}
	return s.c.scripts.SemaphoreTrySetPermitsTTL(ctx, s.c.rdb, s.name, permits, wholeMillis(ttl))
}

// SetPermits sets the number of available permits, whether or not the
// semaphore exists and whatever it held, and keeps its time to live if it
// has one. Waiters that the new count can serve are woken.
func (s *Semaphore) SetPermits(ctx context.Context, permits int64) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(s.check(), validateCount("permits", permits)); err != nil {
		return err
	}
	_, err := s.c.scripts.SemaphoreSetPermits(ctx, s.c.rdb, s.name, permits)
	return err
}

// ReleaseIfExists gives permits permits back, as Release does, but only if
// the semaphore exists: a semaphore that expired or was deleted is not
// brought back to life by a late release. It reports whether it gave them
// back (Redisson's releaseIfExists). Releasing 0 permits does nothing and
// reports false.
func (s *Semaphore) ReleaseIfExists(ctx context.Context, permits int64) (bool, error) {
	_, ok, err := s.ReleaseIfExistsAvailable(ctx, permits)
	return ok, err
}

// ReleaseIfExistsAvailable is ReleaseIfExists that also returns the
// permits available just after the release, in the same script (0 when it
// gave none back), before any waiter it woke takes them.
func (s *Semaphore) ReleaseIfExistsAvailable(ctx context.Context, permits int64) (int64, bool, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, false, err
	}
	if err := messages.Join(s.check(), validateCount("permits", permits)); err != nil || permits == 0 {
		return 0, false, err
	}
	span := s.c.tel.releaseSpan(ctx, meterKind(messages.KindSemaphore), s.name)
	ok, left, err := s.c.scripts.SemaphoreReleaseIfExists(ctx, s.c.rdb, s.name, s.c.nextRequestID(), permits)
	if err == nil && !ok {
		endRelease(span, ErrNotHeld) // no semaphore to give them back to
	} else {
		endRelease(span, err)
	}
	if !ok {
		left = 0
	}
	return left, ok, err
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
// were. The semaphore keeps its time to live, if it has one.
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := s.check(); err != nil {
		return 0, err
	}
	return s.c.scripts.SemaphoreDrain(ctx, s.c.rdb, s.name)
}

// Expire gives the semaphore ttl to live (rounded up to whole
// milliseconds, at least 1ms); when it expires, its permits go with it. It
// reports whether the semaphore exists.
func (s *Semaphore) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	return s.keys().expire(ctx, ttl)
}

// ExpireAt makes the semaphore expire at t (a time already past deletes
// it). It reports whether the semaphore exists. t must be after the Unix
// epoch, at most 2^53 ms after it.
func (s *Semaphore) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	return s.keys().expireAt(ctx, t)
}

// ClearExpire removes the semaphore's time to live. It reports whether it
// had one.
func (s *Semaphore) ClearExpire(ctx context.Context) (bool, error) {
	return s.keys().clearExpire(ctx)
}

// RemainTTL returns the semaphore's remaining time to live: -1 when it
// has none, -2 when the semaphore does not exist (Redis's PTTL, Redisson's
// remainTimeToLive).
func (s *Semaphore) RemainTTL(ctx context.Context) (time.Duration, error) {
	return s.keys().remainTTL(ctx)
}

// Delete deletes the semaphore with its permits; it reports whether it
// existed. A later acquire waits until permits are set or released again.
func (s *Semaphore) Delete(ctx context.Context) (bool, error) {
	return s.keys().delete(ctx)
}

// keys are the semaphore's key and the total recorded beside it
// (redisio.PermitsTotalKey), which expire and are deleted together.
func (s *Semaphore) keys() objectKeys {
	if err := s.check(); err != nil {
		return objectKeys{err: err}
	}
	return objectKeys{c: s.c, keys: []string{s.name, redisio.PermitsTotalKey(s.name)}}
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

// validateTTL checks an object's time to live: at least 1ms. Like a lease,
// it may fall between whole milliseconds; the calls round it up.
func validateTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalid("ttl", "%v is less than 1ms", ttl)
	}
	return nil
}

// validateExpireAt checks an expiry time: after the Unix epoch, and at
// most 2^53 ms after it (the scripts take whole numbers up to 2^53).
func validateExpireAt(t time.Time) error {
	switch ms := t.UnixMilli(); {
	case ms < 1:
		return invalid("expire at", "%v is not after the Unix epoch", t)
	case ms > maxCount:
		return invalid("expire at", "%v is more than 2^53 ms after the Unix epoch", t)
	}
	return nil
}

// objectKeys are the keys of one object, which live and die together,
// for the calls on its time to live and its deletion; err is its
// handle's check, which every call returns first (after checkCtx's).
type objectKeys struct {
	c    *Client
	keys []string // the object's name first
	err  error
}

func (o objectKeys) expire(ctx context.Context, ttl time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(o.err, validateTTL(ttl)); err != nil {
		return false, err
	}
	return redisio.Expire(ctx, o.c.rdb, o.keys, wholeMillis(ttl))
}

func (o objectKeys) expireAt(ctx context.Context, t time.Time) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(o.err, validateExpireAt(t)); err != nil {
		return false, err
	}
	return redisio.ExpireAt(ctx, o.c.rdb, o.keys, t)
}

func (o objectKeys) clearExpire(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if o.err != nil {
		return false, o.err
	}
	return redisio.ClearExpire(ctx, o.c.rdb, o.keys)
}

// remainTTL is the PTTL of the object's name: -1 when it has none, -2
// when it does not exist.
func (o objectKeys) remainTTL(ctx context.Context) (time.Duration, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if o.err != nil {
		return 0, o.err
	}
	ttl, exists, err := redisio.RemainTTL(ctx, o.c.rdb, o.keys[0])
	switch {
	case err != nil:
		return 0, err
	case !exists:
		return -2, nil
	}
	return ttl, nil
}

func (o objectKeys) delete(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if o.err != nil {
		return false, o.err
	}
	return redisio.Delete(ctx, o.c.rdb, o.keys...)
}
