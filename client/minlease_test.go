package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

// A lease under MinLease is refused by every leased call, naming the
// minimum, before any Redis call; a lease of MinLease works: it outlives
// its own acquire. (A lease of 1ms used to be accepted and then always
// failed with ErrLockLost: the engine counts a lease less Redis's 1ms
// clock grain, so it had run out before its answer came.)
func TestLeasesUnderMinLeaseAreRefusedAndMinLeaseWorks(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	short := client.MinLease - time.Millisecond
	p := c.PermitExpirableSemaphore("ml:permits")
	set(t, p.TrySetPermits, 1)

	calls := []struct {
		what string
		call func(lease time.Duration) error
	}{
		{"Lock.LockLease", func(d time.Duration) error { return c.Lock("ml:a").LockLease(ctx, d) }},
		{"Lock.TryLockWait", func(d time.Duration) error { _, err := c.Lock("ml:b").TryLockWait(ctx, 0, d); return err }},
		{"FairLock.LockLease", func(d time.Duration) error { return c.FairLock("ml:c").LockLease(ctx, d) }},
		{"NonReentrantLock.LockLease", func(d time.Duration) error { return c.NonReentrantLock("ml:d").LockLease(ctx, d) }},
		{"SpinLock.LockLease", func(d time.Duration) error { return c.SpinLock("ml:e").LockLease(ctx, d) }},
		{"ReadLock.LockLease", func(d time.Duration) error { return c.ReadWriteLock("ml:f").ReadLock().LockLease(ctx, d) }},
		{"WriteLock.LockLease", func(d time.Duration) error { return c.ReadWriteLock("ml:g").WriteLock().LockLease(ctx, d) }},
		{"FencedLock.TryLockToken", func(d time.Duration) error { _, _, err := c.FencedLock("ml:h").TryLockToken(ctx, 0, d); return err }},
		{"GroupLock.LockLease", func(d time.Duration) error { return c.GroupLock("ml:i", "v").LockLease(ctx, d) }},
		{"MultiLock.LockLease", func(d time.Duration) error { return client.NewMultiLock(c.Lock("ml:j")).LockLease(ctx, d) }},
		{"RedLock.LockLease", func(d time.Duration) error { return client.NewRedLock(c.Lock("ml:k")).LockLease(ctx, d) }},
		{"Lock.Extend", func(d time.Duration) error { return c.Lock("ml:a").Extend(ctx, d) }},
		{"PermitExpirableSemaphore.Acquire", func(d time.Duration) error { _, err := p.Acquire(ctx, d); return err }},
	}
	for _, tc := range calls {
		for _, d := range []time.Duration{time.Millisecond, short} {
			err := tc.call(d)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "%s(%v)", tc.what, d)
			assert.ErrorContains(t, err, "lease", tc.what)
			assert.ErrorContains(t, err, client.MinLease.String(), "%s: the error names the minimum", tc.what)
		}
	}
	assert.Equal(t, []string{"ml:permits"}, dataKeys(t, e.rdb), "nothing was written but the permits set up")

	// MinLease itself outlives its acquire, every time.
	l := c.Lock("ml:works")
	for i := range 100 {
		require.NoError(t, l.LockLease(ctx, client.MinLease), "attempt %d", i)
		require.NoError(t, l.Unlock(ctx), "attempt %d", i)
	}

	// A lease is rounded up to whole milliseconds before the check: just
	// under MinLease is MinLease.
	require.NoError(t, l.LockLease(ctx, client.MinLease-time.Millisecond/2), "rounded up to MinLease")
	ttl, err := l.RemainTTL(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl, client.MinLease)
	require.NoError(t, l.Unlock(ctx))
}
