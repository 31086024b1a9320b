package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// TrySetPermitsTTL sets the semaphore once, with its TTL; once the TTL
// runs out the semaphore is gone with its permits, and can be set again.
func TestSemaphoreTrySetPermitsTTL(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		s := e.newClient(t).Semaphore("sem-ttl")
		ok, err := s.TrySetPermitsTTL(ctx, 3, 500*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		pttl := e.rdb.PTTL(ctx, "sem-ttl").Val()
		assert.Greater(t, pttl, time.Duration(0), "the semaphore has a TTL")
		assert.LessOrEqual(t, pttl, 500*time.Millisecond)
		assert.Equal(t, int64(3), get(t, s.AvailablePermits))
		ok, err = s.TrySetPermitsTTL(ctx, 7, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "only if absent")
		ok, err = s.TrySetPermits(ctx, 7)
		require.NoError(t, err)
		assert.False(t, ok, "only if absent")
		require.NoError(t, s.Acquire(ctx, 1), "permits of a semaphore with a TTL are taken as any")
		assert.Greater(t, e.rdb.PTTL(ctx, "sem-ttl").Val(), time.Duration(0), "an acquire keeps the TTL")

		e.advance(600 * time.Millisecond)
		eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, "sem-ttl").Val() == 0 }, "the semaphore expired")
		assert.Zero(t, get(t, s.AvailablePermits), "gone with its permits")
		ok, err = s.TrySetPermitsTTL(ctx, 2, time.Hour)
		require.NoError(t, err)
		assert.True(t, ok, "set again once expired")
		assert.Equal(t, int64(2), get(t, s.AvailablePermits))

		for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
			_, err = s.TrySetPermitsTTL(ctx, 1, ttl)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "ttl %v", ttl)
			assert.ErrorContains(t, err, "ttl")
		}
		_, err = s.TrySetPermitsTTL(ctx, -1, time.Second)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "permits")
	})
}

// SetPermits sets the available count whatever it was, keeps the TTL,
// and its message wakes a waiter the new count can serve.
func TestSemaphoreSetPermits(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-set"
		s := messageWaiterClient(t, e).Semaphore(name)
		require.NoError(t, s.SetPermits(ctx, 1), "a missing semaphore is created")
		assert.Equal(t, int64(1), get(t, s.AvailablePermits))
		assert.Equal(t, time.Duration(-1), get(t, s.RemainTTL), "no TTL")

		done := inBackground(t, func(ctx context.Context) error { return s.Acquire(ctx, 3) })
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire(3) with 1 available")
		require.NoError(t, e.newClient(t).Semaphore(name).SetPermits(ctx, 5))
		r := wokenByMessage(t, done, "Acquire(3) after SetPermits(5)")
		require.NoError(t, r.err)
		assert.Equal(t, int64(2), get(t, s.AvailablePermits))

		ok, err := s.Expire(ctx, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.SetPermits(ctx, 0))
		assert.Zero(t, get(t, s.AvailablePermits))
		assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 59*time.Minute, "SetPermits keeps the TTL")

		require.NoError(t, s.AddPermits(ctx, -4))
		require.NoError(t, s.SetPermits(ctx, 2), "from a negative count")
		assert.Equal(t, int64(2), get(t, s.AvailablePermits))

		err = s.SetPermits(ctx, -1)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "permits")
		assert.Equal(t, int64(2), get(t, s.AvailablePermits), "nothing changed")
	})
}

// DrainPermits takes every permit of a semaphore with a TTL and leaves the
// TTL as it was: a semaphore set with TrySetPermitsTTL (or Expire) still
// expires after a drain instead of living on with 0 permits.
func TestSemaphoreDrainPermitsKeepsTheTTL(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-drain-ttl"
		s := e.newClient(t).Semaphore(name)
		ok, err := s.TrySetPermitsTTL(ctx, 5, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, int64(5), get(t, s.DrainPermits))
		assert.Zero(t, get(t, s.AvailablePermits))
		assert.Greater(t, get(t, s.RemainTTL), 59*time.Minute, "the drain keeps the TTL")

		ok, err = s.ClearExpire(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.Release(ctx, 2))
		assert.Equal(t, int64(2), get(t, s.DrainPermits))
		assert.Equal(t, time.Duration(-1), get(t, s.RemainTTL), "no TTL before, none after")
	})
}

// ReleaseIfExists gives permits back only to a semaphore that exists, and
// its message wakes a waiter as Release's does.
func TestSemaphoreReleaseIfExists(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-release-if"
		s := messageWaiterClient(t, e).Semaphore(name)
		ok, err := s.ReleaseIfExists(ctx, 2)
		require.NoError(t, err)
		assert.False(t, ok, "no semaphore")
		assert.Empty(t, dataKeys(t, e.rdb), "nothing written for a missing semaphore")

		set(t, s.TrySetPermits, 0)
		done := inBackground(t, func(ctx context.Context) error { return s.Acquire(ctx, 2) })
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire(2) with none available")
		ok, err = e.newClient(t).Semaphore(name).ReleaseIfExists(ctx, 2)
		require.NoError(t, err)
		assert.True(t, ok)
		r := wokenByMessage(t, done, "Acquire(2) after ReleaseIfExists(2)")
		require.NoError(t, r.err)
		assert.Zero(t, get(t, s.AvailablePermits))

		ok, err = s.ReleaseIfExists(ctx, 3)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, int64(3), get(t, s.AvailablePermits))
		ok, err = s.ReleaseIfExists(ctx, 0)
		require.NoError(t, err)
		assert.False(t, ok, "0 permits: nothing to do (Redisson)")
		_, err = s.ReleaseIfExists(ctx, -1)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "permits")

		deleted, err := s.Delete(ctx)
		require.NoError(t, err)
		require.True(t, deleted)
		ok, err = s.ReleaseIfExists(ctx, 1)
		require.NoError(t, err)
		assert.False(t, ok, "a deleted semaphore is not brought back")
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}

// Expire, ExpireAt, ClearExpire, RemainTTL and Delete act on the
// semaphore's key as Redisson's RExpirable methods do.
func TestSemaphoreExpiryAndDelete(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "sem-expiry"
		s := e.newClient(t).Semaphore(name)
		ok, err := s.Expire(ctx, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "no semaphore to expire")
		assert.Equal(t, time.Duration(-2), get(t, s.RemainTTL), "missing")
		ok, err = s.ClearExpire(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		ok, err = s.Delete(ctx)
		require.NoError(t, err)
		assert.False(t, ok)

		set(t, s.TrySetPermits, 4)
		ok, err = s.Expire(ctx, time.Minute+300*time.Microsecond)
		require.NoError(t, err)
		assert.True(t, ok)
		ttl := get(t, s.RemainTTL)
		assert.Greater(t, ttl, 59*time.Second)
		assert.LessOrEqual(t, ttl, time.Minute+time.Millisecond, "rounded up to the millisecond, no further")

		ok, err = s.ExpireAt(ctx, e.clk.Now().Add(2*time.Hour))
		require.NoError(t, err)
		assert.True(t, ok)
		ttl = get(t, s.RemainTTL)
		assert.Greater(t, ttl, 119*time.Minute)
		assert.LessOrEqual(t, ttl, 2*time.Hour)

		ok, err = s.ClearExpire(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, time.Duration(-1), get(t, s.RemainTTL))
		ok, err = s.ClearExpire(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "no TTL left to clear")

		ok, err = s.Expire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		e.advance(400 * time.Millisecond)
		eventually(t, 2*time.Second, func() bool { return e.rdb.Exists(ctx, name).Val() == 0 }, "expired")
		assert.Zero(t, get(t, s.AvailablePermits))

		set(t, s.TrySetPermits, 1)
		ok, err = s.Delete(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())

		for _, ttl := range []time.Duration{0, -time.Millisecond, time.Nanosecond} {
			_, err = s.Expire(ctx, ttl)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "ttl %v", ttl)
			assert.ErrorContains(t, err, "ttl")
		}
		_, err = s.ExpireAt(ctx, time.Time{})
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "expire at")
	})
}

// ReleasePermits releases all of its permits or none, as Redisson's
// release(List); its message wakes a blocked acquirer.
func TestPermitReleasePermitsAllOrNone(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-release-many"
		p := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
		set(t, p.TrySetPermits, 3)
		ids := make([]string, 3)
		for i := range ids {
			var err error
			ids[i], err = p.Acquire(ctx, 0)
			require.NoError(t, err)
		}
		unknown := redisio.NewPermitID()

		n, err := p.TryReleasePermits(ctx, ids[0], unknown)
		require.NoError(t, err)
		assert.Zero(t, n, "one unknown: none released")
		assert.Equal(t, int64(3), get(t, p.AcquiredPermits), "ids[0] still held")
		require.ErrorIs(t, p.ReleasePermits(ctx, ids[1], unknown), client.ErrNotHeld)
		assert.Equal(t, int64(3), get(t, p.AcquiredPermits))

		var got string
		done := inBackground(t, func(ctx context.Context) error {
			var err error
			got, err = p.Acquire(ctx, 0)
			return err
		})
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire with every permit held")
		n, err = e.newClient(t).PermitExpirableSemaphore(name).TryReleasePermits(ctx, ids[0], ids[1])
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		r := wokenByMessage(t, done, "Acquire after two permits were released")
		require.NoError(t, r.err)
		assert.Regexp(t, permitIDFormat, got)
		assert.Equal(t, int64(1), get(t, p.AvailablePermits))

		require.NoError(t, p.ReleasePermits(ctx, ids[2], got))
		assert.Equal(t, int64(3), get(t, p.AvailablePermits))
		require.ErrorIs(t, p.ReleasePermits(ctx, ids[2]), client.ErrNotHeld, "already released")

		for what, bad := range map[string][]string{
			"none":      nil,
			"duplicate": {ids[0], ids[0]},
			"malformed": {ids[0], "xyz"},
			"empty":     {""},
		} {
			_, err = p.TryReleasePermits(ctx, bad...)
			require.ErrorIs(t, err, client.ErrInvalidArgument, what)
			assert.ErrorContains(t, err, "permit IDs", what)
			require.ErrorIs(t, p.ReleasePermits(ctx, bad...), client.ErrInvalidArgument, what)
		}
		assert.Equal(t, int64(3), get(t, p.AvailablePermits), "bad input changed nothing")
	})
}

// A permit whose lease ran out cannot be released with others: none is.
func TestPermitReleasePermitsWithAnExpiredOne(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		p := e.newClient(t).PermitExpirableSemaphore("permit-release-expired")
		set(t, p.TrySetPermits, 2)
		short, err := p.Acquire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		long, err := p.Acquire(ctx, time.Hour)
		require.NoError(t, err)
		e.advance(400 * time.Millisecond)
		n, err := p.TryReleasePermits(ctx, long, short)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, int64(1), get(t, p.AcquiredPermits), "the long one is still held")
		assert.Equal(t, int64(1), get(t, p.AvailablePermits), "the expired one came back by itself")
		require.NoError(t, p.ReleasePermits(ctx, long))
		assert.Equal(t, int64(2), get(t, p.AvailablePermits))
	})
}

// RemainLease reads what is left of a permit's lease (Redisson's
// getLeaseTime): -1 for one that never expires, ErrNotHeld once it is
// released or expired.
func TestPermitRemainLease(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		p := e.newClient(t).PermitExpirableSemaphore("permit-remain")
		set(t, p.TrySetPermits, 3)
		id, err := p.Acquire(ctx, 10*time.Second)
		require.NoError(t, err)
		left, err := p.RemainLease(ctx, id)
		require.NoError(t, err)
		assert.Greater(t, left, 9*time.Second)
		assert.LessOrEqual(t, left, 10*time.Second)

		forever, err := p.Acquire(ctx, 0)
		require.NoError(t, err)
		left, err = p.RemainLease(ctx, forever)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), left, "never expires")

		ok, err := p.UpdateLease(ctx, forever, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		left, err = p.RemainLease(ctx, forever)
		require.NoError(t, err)
		assert.Greater(t, left, 59*time.Minute, "the updated lease")

		short, err := p.Acquire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		e.advance(400 * time.Millisecond)
		_, err = p.RemainLease(ctx, short)
		require.ErrorIs(t, err, client.ErrNotHeld, "expired")
		require.NoError(t, p.Release(ctx, id))
		_, err = p.RemainLease(ctx, id)
		require.ErrorIs(t, err, client.ErrNotHeld, "released")
		_, err = p.RemainLease(ctx, redisio.NewPermitID())
		require.ErrorIs(t, err, client.ErrNotHeld, "unknown")
		_, err = p.RemainLease(ctx, "nope")
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "permit ID")
	})
}

// SetPermits sets the number of permits, held ones included, as Redisson's
// setPermits; Permits and AcquiredPermits read them back, and the new
// count's message wakes a waiter.
func TestPermitSetPermitsAndCounts(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-set"
		p := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
		assert.Zero(t, get(t, p.Permits), "missing")
		assert.Zero(t, get(t, p.AcquiredPermits))

		require.NoError(t, p.SetPermits(ctx, 3))
		assert.Equal(t, int64(3), get(t, p.Permits))
		a, err := p.Acquire(ctx, 0)
		require.NoError(t, err)
		b, err := p.Acquire(ctx, time.Hour)
		require.NoError(t, err)
		assert.Equal(t, int64(3), get(t, p.Permits), "held ones count")
		assert.Equal(t, int64(2), get(t, p.AcquiredPermits))
		assert.Equal(t, int64(1), get(t, p.AvailablePermits))

		require.NoError(t, p.SetPermits(ctx, 1))
		assert.Equal(t, int64(-1), get(t, p.AvailablePermits), "more held than the new number")
		assert.Equal(t, int64(1), get(t, p.Permits))
		require.NoError(t, p.Release(ctx, a))
		assert.Zero(t, get(t, p.AvailablePermits))

		var got string
		done := inBackground(t, func(ctx context.Context) error {
			var err error
			got, err = p.Acquire(ctx, 0)
			return err
		})
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire with none available")
		require.NoError(t, e.newClient(t).PermitExpirableSemaphore(name).SetPermits(ctx, 2))
		r := wokenByMessage(t, done, "Acquire after SetPermits(2)")
		require.NoError(t, r.err)
		assert.Regexp(t, permitIDFormat, got)
		assert.Equal(t, int64(2), get(t, p.AcquiredPermits))
		assert.Equal(t, int64(2), get(t, p.Permits))
		require.NoError(t, p.ReleasePermits(ctx, b, got))
		assert.Equal(t, int64(2), get(t, p.AvailablePermits))

		err = p.SetPermits(ctx, -1)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "permits")
		assert.Equal(t, int64(2), get(t, p.Permits), "nothing changed")
	})
}

// The permit semaphore's expiry methods and Delete act on both of its
// keys: the count and the held permits.
func TestPermitExpiryAndDelete(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-expiry-keys"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		timeout := redisio.PermitTimeoutKey(name)
		assert.Equal(t, time.Duration(-2), get(t, p.RemainTTL))
		set(t, p.TrySetPermits, 2)
		_, err := p.Acquire(ctx, 0)
		require.NoError(t, err)

		ok, err := p.Expire(ctx, time.Minute)
		require.NoError(t, err)
		assert.True(t, ok)
		for _, k := range []string{name, timeout} {
			assert.Greater(t, e.rdb.PTTL(ctx, k).Val(), 59*time.Second, k)
		}
		assert.Greater(t, get(t, p.RemainTTL), 59*time.Second)
		ok, err = p.ExpireAt(ctx, e.clk.Now().Add(time.Hour))
		require.NoError(t, err)
		assert.True(t, ok)
		for _, k := range []string{name, timeout} {
			assert.Greater(t, e.rdb.PTTL(ctx, k).Val(), 59*time.Minute, k)
		}
		ok, err = p.ClearExpire(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		for _, k := range []string{name, timeout} {
			assert.Equal(t, time.Duration(-1), e.rdb.PTTL(ctx, k).Val(), k)
		}
		assert.Equal(t, time.Duration(-1), get(t, p.RemainTTL))

		ok, err = p.Delete(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, e.rdb.Exists(ctx, name, timeout).Val(), "both keys gone")
		ok, err = p.Delete(ctx)
		require.NoError(t, err)
		assert.False(t, ok)
		_, err = p.Expire(ctx, 0)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "ttl")
	})
}

// Delete removes the latch; every waiter, on this client and another, is
// released by its message, as a missing latch counts zero.
func TestLatchDeleteReleasesWaiters(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-delete"
		clients := []*client.Client{messageWaiterClient(t, e), messageWaiterClient(t, e)}
		d := clients[0].CountDownLatch(name)
		ok, err := d.Delete(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "no latch")

		set(t, d.TrySetCount, 3)
		waiters := newBackground(t, 4)
		for i := range 4 {
			waiters.run(i, clients[i%2].CountDownLatch(name).Await)
		}
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 2)
		staysBlocked(t, e, waiters.C, 500*time.Millisecond, "an Await at count 3")

		ok, err = e.newClient(t).CountDownLatch(name).Delete(ctx)
		require.NoError(t, err)
		assert.True(t, ok)
		for range 4 {
			r := wokenByMessage(t, waiters.C, "each waiter, after Delete")
			require.NoError(t, r.err, "waiter %d", r.i)
		}
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
		assert.Zero(t, get(t, d.Count))
		set(t, d.TrySetCount, 1) // set anew once deleted
	})
}

// Bad input to the new methods is refused with ErrInvalidArgument naming
// the field, before any Redis call: nothing is written. After Close they
// return ErrClosed.
func TestSyncMethodsBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		s, p, d := c.Semaphore("bad-sem"), c.PermitExpirableSemaphore("bad-permit"), c.CountDownLatch("")
		id := redisio.NewPermitID()
		bad := []struct {
			field string
			call  func() error
		}{
			{"permits", func() error { _, err := s.TrySetPermitsTTL(ctx, -1, time.Second); return err }},
			{"ttl", func() error { _, err := s.TrySetPermitsTTL(ctx, 1, 0); return err }},
			{"ttl", func() error { _, err := s.TrySetPermitsTTL(ctx, 1, -time.Hour); return err }},
			{"permits", func() error { return s.SetPermits(ctx, -1) }},
			{"permits", func() error { return s.SetPermits(ctx, 1<<53+1) }},
			{"permits", func() error { _, err := s.ReleaseIfExists(ctx, -2); return err }},
			{"ttl", func() error { _, err := s.Expire(ctx, 999*time.Microsecond); return err }},
			{"expire at", func() error { _, err := s.ExpireAt(ctx, time.Unix(0, 0)); return err }},
			{"permits", func() error { return p.SetPermits(ctx, -1) }},
			{"permit ID", func() error { _, err := p.RemainLease(ctx, ""); return err }},
			{"permit ID", func() error { _, err := p.RemainLease(ctx, strings.ToUpper(id)); return err }},
			{"permit IDs", func() error { _, err := p.TryReleasePermits(ctx); return err }},
			{"permit IDs", func() error { return p.ReleasePermits(ctx, id, id) }},
			{"permit IDs", func() error { return p.ReleasePermits(ctx, id, id[:31]) }},
			{"ttl", func() error { _, err := p.Expire(ctx, 0); return err }},
			{"expire at", func() error { _, err := p.ExpireAt(ctx, time.Time{}); return err }},
			{"expire at", func() error { _, err := s.ExpireAt(ctx, time.UnixMilli(1<<53+1)); return err }},
			{"expire at", func() error { _, err := p.ExpireAt(ctx, time.UnixMilli(1<<53+1)); return err }},
			{"name", func() error { _, err := d.Delete(ctx); return err }},
			{"name", func() error { _, err := c.Semaphore("").Delete(ctx); return err }},
			{"name", func() error { _, err := c.PermitExpirableSemaphore("").Delete(ctx); return err }},
		}
		for i, b := range bad {
			err := b.call()
			require.ErrorIs(t, err, client.ErrInvalidArgument, "case %d", i)
			assert.ErrorContains(t, err, b.field, "case %d", i)
		}
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")

		e.close(t, c)
		ok, err := s.TrySetPermitsTTL(ctx, 1, time.Second)
		require.ErrorIs(t, err, client.ErrClosed)
		assert.False(t, ok)
		require.ErrorIs(t, s.SetPermits(ctx, 1), client.ErrClosed)
		_, err = p.RemainLease(ctx, id)
		require.ErrorIs(t, err, client.ErrClosed)
		_, err = p.TryReleasePermits(ctx, id)
		require.ErrorIs(t, err, client.ErrClosed)
		_, err = c.CountDownLatch("x").Delete(ctx)
		require.ErrorIs(t, err, client.ErrClosed)
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
	})
}

// AcquirePermits takes several permits at once, all or none (Redisson's
// acquire(permits, leaseTime)): a refused attempt takes nothing, and a
// waiter for several is woken when a release makes enough available.
func TestPermitAcquirePermitsAllOrNone(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-acquire-many"
		p := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
		require.NoError(t, p.SetPermits(ctx, 5))
		ids, err := p.AcquirePermits(ctx, 3, time.Hour)
		require.NoError(t, err)
		require.Len(t, ids, 3)
		seen := map[string]bool{}
		for _, id := range ids {
			assert.Regexp(t, permitIDFormat, id)
			assert.False(t, seen[id], "distinct IDs")
			seen[id] = true
			left, err := p.RemainLease(ctx, id)
			require.NoError(t, err)
			assert.Greater(t, left, 59*time.Minute, "each with the lease")
		}
		assert.Equal(t, int64(3), get(t, p.AcquiredPermits))

		got, ok, err := p.TryAcquirePermits(ctx, 3, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok, "2 left, 3 asked")
		assert.Nil(t, got)
		assert.Equal(t, int64(2), get(t, p.AvailablePermits), "a refused attempt takes nothing")

		var waited []string
		done := inBackground(t, func(ctx context.Context) error {
			var err error
			waited, err = p.AcquirePermits(ctx, 3, 0)
			return err
		})
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "AcquirePermits(3) with 2 available")
		require.NoError(t, e.newClient(t).PermitExpirableSemaphore(name).ReleasePermits(ctx, ids[0]))
		r := wokenByMessage(t, done, "AcquirePermits(3) after a release")
		require.NoError(t, r.err)
		require.Len(t, waited, 3)
		left, err := p.RemainLease(ctx, waited[2])
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), left, "lease 0: never expires")
		assert.Zero(t, get(t, p.AvailablePermits))
		assert.Equal(t, int64(5), get(t, p.AcquiredPermits))

		one, ok, err := p.TryAcquirePermits(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Nil(t, one)
		require.NoError(t, p.ReleasePermits(ctx, append(waited, ids[1:]...)...))
		one, ok, err = p.TryAcquirePermits(ctx, 1, 0, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, one, 1)
		require.NoError(t, p.Release(ctx, one[0]))
		assert.Equal(t, int64(5), get(t, p.AvailablePermits))

		for _, n := range []int64{0, -1, 1001} {
			_, err = p.AcquirePermits(ctx, n, 0)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "permits %d", n)
			assert.ErrorContains(t, err, "permits")
			_, _, err = p.TryAcquirePermits(ctx, n, 0, 0)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "permits %d", n)
		}
		_, _, err = p.TryAcquirePermits(ctx, 2, -time.Second, 0)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "wait")
		_, err = p.AcquirePermits(ctx, 2, -time.Second)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.ErrorContains(t, err, "lease")
		assert.Equal(t, int64(5), get(t, p.AvailablePermits), "bad input took nothing")
	})
}

// A cancelled AcquirePermits takes nothing, and the ones it was waiting
// for stay for the next acquirer.
func TestPermitAcquirePermitsCancelledTakesNothing(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-acquire-many-cancel"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		require.NoError(t, p.SetPermits(ctx, 1))
		cctx, cancel := context.WithCancel(ctx)
		done := inBackground(t, func(context.Context) error {
			_, err := p.AcquirePermits(cctx, 2, 0)
			return err
		})
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		cancel()
		r := await.Value(t, done, 5*time.Second, "the cancelled AcquirePermits")
		require.ErrorIs(t, r.err, client.ErrNotObtained)
		require.ErrorIs(t, r.err, context.Canceled)
		require.NoError(t, p.AddPermits(ctx, 1))
		ids, ok, err := p.TryAcquirePermits(ctx, 2, 0, 0)
		require.NoError(t, err)
		require.True(t, ok, "both permits are there")
		require.NoError(t, p.ReleasePermits(ctx, ids...))
		assert.Equal(t, int64(2), get(t, p.AvailablePermits))
	})
}
