package client_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

var permitIDFormat = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestPermitAcquireReturnsAnIDAndReleaseSpendsIt(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-ids"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, p.TrySetPermits, 2)
		ok, err := p.TrySetPermits(ctx, 9)
		require.NoError(t, err)
		assert.False(t, ok, "TrySetPermits only once")
		assert.Equal(t, int64(2), get(t, p.AvailablePermits))

		id, err := p.Acquire(ctx, 0)
		require.NoError(t, err)
		assert.Regexp(t, permitIDFormat, id, "32 lowercase hex characters")
		other, ok, err := p.TryAcquire(ctx, 0, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Regexp(t, permitIDFormat, other)
		assert.NotEqual(t, id, other, "each permit has its own ID")
		assert.Zero(t, get(t, p.AvailablePermits))
		assert.Equal(t, int64(2), e.rdb.ZCard(ctx, redisio.PermitTimeoutKey(name)).Val(), "both permits held in Redis")

		require.NoError(t, p.Release(ctx, id))
		assert.Equal(t, int64(1), get(t, p.AvailablePermits))
		assert.Equal(t, int64(1), e.rdb.ZCard(ctx, redisio.PermitTimeoutKey(name)).Val())

		err = p.Release(ctx, id)
		require.ErrorIs(t, err, client.ErrNotHeld, "a second release")
		ok, err = p.TryRelease(ctx, id)
		require.NoError(t, err)
		assert.False(t, ok, "a second TryRelease")
		require.ErrorIs(t, p.Release(ctx, redisio.NewPermitID()), client.ErrNotHeld, "an unknown ID")
		assert.Equal(t, int64(1), get(t, p.AvailablePermits), "failed releases give nothing back")

		for _, bad := range []string{"1234", "", "ABCDEF0123456789ABCDEF0123456789", other + "0"} {
			require.ErrorIs(t, p.Release(ctx, bad), client.ErrInvalidArgument, bad)
			_, err := p.TryRelease(ctx, bad)
			require.ErrorIs(t, err, client.ErrInvalidArgument, bad)
			_, err = p.UpdateLease(ctx, bad, time.Second)
			require.ErrorIs(t, err, client.ErrInvalidArgument, bad)
		}
		ok, err = p.TryRelease(ctx, other)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "2", e.rdb.Get(ctx, name).Val())
		assert.Zero(t, e.rdb.Exists(ctx, redisio.PermitTimeoutKey(name)).Val(), "no permit held")
	})
}

func TestPermitBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		p := e.newClient(t).PermitExpirableSemaphore("permit-bad")
		_, err := p.TrySetPermits(ctx, -1)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		_, err = p.Acquire(ctx, -time.Second)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		_, err = p.Acquire(ctx, time.Microsecond)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		_, _, err = p.TryAcquire(ctx, -time.Second, 0)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		_, err = p.UpdateLease(ctx, redisio.NewPermitID(), -time.Second)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		_, err = e.newClient(t).PermitExpirableSemaphore("").Acquire(ctx, 0)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
	})
}

// A holder's 500 ms lease ends unreleased: a blocked acquirer gets the
// permit about then (Redisson's testExpire), and the holder's release is
// refused. Nobody publishes at the expiry: the waiter sleeps until the
// nearest lease end it learnt when refused. Its client's 30 s watchdog puts
// its own look-again 10 s away, on either clock, so only that can wake it
// in time.
func TestPermitLeaseExpiryHandsThePermitToAWaiter(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-expiry"
		holder := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, holder.TrySetPermits, 1)
		start := e.clk.Now()
		held, err := holder.Acquire(ctx, 500*time.Millisecond) // never released
		require.NoError(t, err)

		type result struct {
			id  string
			err error
		}
		got := make(chan result, 1)
		waiter := e.newClient(t, client.WithWatchdogTimeout(30*time.Second)).PermitExpirableSemaphore(name)
		go func() { id, err := waiter.Acquire(ctx, 0); got <- result{id, err} }()
		r, _ := awaitWhileTime(t, e, got, 5*time.Second, "the waiter, after the holder's lease")
		require.NoError(t, r.err)
		took := e.clk.Now().Sub(start)
		assert.GreaterOrEqual(t, took, 450*time.Millisecond, "not before the lease ends")
		assert.Less(t, took, 1500*time.Millisecond, "about the lease: woken at the nearest expiry")
		assert.Regexp(t, permitIDFormat, r.id)
		assert.NotEqual(t, held, r.id)

		ok, err := holder.TryRelease(ctx, held)
		require.NoError(t, err)
		assert.False(t, ok, "the expired holder's release")
		require.ErrorIs(t, holder.Release(ctx, held), client.ErrNotHeld)
		assert.Zero(t, get(t, holder.AvailablePermits), "the waiter holds the only permit")
		require.NoError(t, waiter.Release(ctx, r.id))
		assert.Equal(t, int64(1), get(t, holder.AvailablePermits))
	})
}

// A holder's release, of a permit that never expires, wakes a blocked
// acquirer by its message: the waiter's own look-again is out of reach.
func TestPermitReleaseWakesABlockedAcquire(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-wake-release"
		holder := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, holder.TrySetPermits, 1)
		held, err := holder.Acquire(ctx, 0) // no lease end to wake on
		require.NoError(t, err)

		var id string
		waiter := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
		done := inBackground(t, func(ctx context.Context) error {
			var err error
			id, err = waiter.Acquire(ctx, 0)
			return err
		})
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		staysBlocked(t, e, done, 500*time.Millisecond, "Acquire with the only permit held")
		require.NoError(t, holder.Release(ctx, held))
		r := wokenByMessage(t, done, "Acquire after the release")
		require.NoError(t, r.err)
		assert.Regexp(t, permitIDFormat, id)
		assert.NotEqual(t, held, id)
		assert.Zero(t, get(t, holder.AvailablePermits), "the waiter holds the only permit")
		require.NoError(t, waiter.Release(ctx, id))
		assert.Equal(t, int64(1), get(t, holder.AvailablePermits))
	})
}

func TestPermitUpdateLease(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		p := e.newClient(t).PermitExpirableSemaphore("permit-update")
		set(t, p.TrySetPermits, 1)
		id, err := p.Acquire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		ok, err := p.UpdateLease(ctx, id, 2*time.Second)
		require.NoError(t, err)
		assert.True(t, ok, "while held")

		e.advance(600 * time.Millisecond) // past the first lease, within the new one
		assert.Zero(t, get(t, p.AvailablePermits), "the longer lease holds the permit")
		ok, err = p.UpdateLease(ctx, id, 200*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, ok, "still held")

		e.advance(600 * time.Millisecond)
		ok, err = p.UpdateLease(ctx, id, time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, "after expiry")
		assert.Equal(t, int64(1), get(t, p.AvailablePermits))
		ok, err = p.TryRelease(ctx, id)
		require.NoError(t, err)
		assert.False(t, ok)

		// Lease 0: the permit never expires, also after UpdateLease(0).
		id, err = p.Acquire(ctx, 200*time.Millisecond)
		require.NoError(t, err)
		ok, err = p.UpdateLease(ctx, id, 0)
		require.NoError(t, err)
		assert.True(t, ok)
		e.advance(500 * time.Millisecond)
		assert.Zero(t, get(t, p.AvailablePermits))
		require.NoError(t, p.Release(ctx, id))
	})
}

func TestPermitAvailablePermitsTrackExpiry(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-available"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, p.TrySetPermits, 3)
		short, err := p.Acquire(ctx, 300*time.Millisecond)
		require.NoError(t, err)
		long, err := p.Acquire(ctx, 1200*time.Millisecond)
		require.NoError(t, err)
		forever, err := p.Acquire(ctx, 0)
		require.NoError(t, err)
		assert.Zero(t, get(t, p.AvailablePermits))

		e.advance(700 * time.Millisecond)
		assert.Equal(t, int64(1), get(t, p.AvailablePermits), "the short lease ended")
		assert.Equal(t, int64(2), e.rdb.ZCard(ctx, redisio.PermitTimeoutKey(name)).Val(), "and was reclaimed in Redis")
		e.advance(900 * time.Millisecond)
		assert.Equal(t, int64(2), get(t, p.AvailablePermits), "the long lease ended")
		assert.Equal(t, "2", e.rdb.Get(ctx, name).Val())

		for _, id := range []string{short, long} {
			ok, err := p.TryRelease(ctx, id)
			require.NoError(t, err)
			assert.False(t, ok, "an expired permit's release")
		}
		require.NoError(t, p.Release(ctx, forever), "lease 0 never expires")
		assert.Equal(t, int64(3), get(t, p.AvailablePermits))
	})
}

func TestPermitTryAcquireGivesUpAfterItsWait(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		p := e.newClient(t).PermitExpirableSemaphore("permit-try")
		set(t, p.TrySetPermits, 1)
		held, err := p.Acquire(ctx, 0)
		require.NoError(t, err)

		id, ok, err := p.TryAcquire(ctx, 0, 0)
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Empty(t, id)

		type result struct {
			id  string
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() { id, ok, err := p.TryAcquire(ctx, 500*time.Millisecond, 0); done <- result{id, ok, err} }()
		r, took := awaitWhileTime(t, e, done, 3*time.Second, "TryAcquire(500ms)")
		require.NoError(t, r.err)
		assert.False(t, r.ok)
		assert.Empty(t, r.id)
		assert.GreaterOrEqual(t, took, 490*time.Millisecond)
		assert.Less(t, took, 2*time.Second)
		require.NoError(t, p.Release(ctx, held), "the holding is untouched")
		assert.Equal(t, int64(1), get(t, p.AvailablePermits))
	})
}

func TestPermitCancelledAcquireTakesNothing(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-cancel"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, p.TrySetPermits, 1)
		held, err := p.Acquire(ctx, 0)
		require.NoError(t, err)

		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := p.Acquire(actx, 0); done <- err }()
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		cancel()
		err = await.Value(t, done, 2*time.Second, "a cancelled Acquire returning promptly")
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)

		require.NoError(t, p.Release(ctx, held))
		e.advance(100 * time.Millisecond)
		assert.Equal(t, int64(1), get(t, p.AvailablePermits), "the cancelled waiter took nothing")
		assert.Zero(t, e.rdb.Exists(ctx, redisio.PermitTimeoutKey(name)).Val())
	})
}

func TestPermitContention(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const permits = 2
		clients := []*client.Client{e.newClient(t), e.newClient(t)}
		set(t, clients[0].PermitExpirableSemaphore("permit-contention").TrySetPermits, permits)
		sems := make([]*client.PermitExpirableSemaphore, 6)
		ids := make([]string, len(sems)) // ids[i] is only touched by contender i
		for i := range sems {
			sems[i] = clients[i%2].PermitExpirableSemaphore("permit-contention")
		}
		contend(t, len(sems), 15, permits,
			func(i int) error {
				id, err := sems[i].Acquire(ctx, 0)
				ids[i] = id
				return err
			},
			func(i int) error { return sems[i].Release(ctx, ids[i]) })
		assert.Equal(t, int64(permits), get(t, sems[0].AvailablePermits), "every permit given back")
		assert.Zero(t, e.rdb.Exists(ctx, redisio.PermitTimeoutKey("permit-contention")).Val())
	})
}

func TestPermitLostMessageDoesNotHangTheWaiter(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "permit-lost-msg"
		p := e.newClient(t).PermitExpirableSemaphore(name)
		set(t, p.TrySetPermits, 1)
		_, err := p.Acquire(ctx, 0) // never expires: no expiry to wake on
		require.NoError(t, err)

		type result struct {
			id  string
			err error
		}
		got := make(chan result, 1)
		go func() { id, err := p.Acquire(ctx, 0); got <- result{id, err} }()
		awaitCountSubscribers(t, e, redisio.SemaphoreChannel(name), 1)
		// A permit appears without a message: the look-again finds it.
		withoutMessage(t, e, got, func() error { return e.rdb.IncrBy(ctx, name, 1).Err() })
		r, took := awaitWhileTime(t, e, got, 5*time.Second, "the waiter, without a release message")
		require.NoError(t, r.err)
		assert.Regexp(t, permitIDFormat, r.id)
		assert.Less(t, took, watchdog/3+time.Second, "within the look-again bound")
		assert.Equal(t, "0", e.rdb.Get(ctx, name).Val())
		assert.Equal(t, int64(2), e.rdb.ZCard(ctx, redisio.PermitTimeoutKey(name)).Val())
	})
}
