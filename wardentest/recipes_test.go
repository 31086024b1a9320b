package wardentest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/wardentest"
)

// The four recipes of the package documentation, as tests. Each runs on
// the kit's fake clock: minutes of lock time in well under a second.

// copyRows is code under test for recipe 1: it copies batches while it
// holds the lock, and stops at the first batch after the lock is lost.
func copyRows(ctx context.Context, l *client.Lock, batches int, copyBatch func(i int)) (int, error) {
	if err := l.Lock(ctx); err != nil {
		return 0, err
	}
	defer func() { _ = l.Unlock(context.WithoutCancel(ctx)) }()
	for i := range batches {
		select {
		case <-l.Lost():
			return i, client.ErrLockLost
		default:
		}
		copyBatch(i)
	}
	return batches, nil
}

// Recipe 1: my code handles Lost().
func TestRecipeMyCodeHandlesLost(t *testing.T) {
	defer wallLimit(t, time.Now())
	kit := wardentest.New(t) // watchdog locks: a 30s lease, renewed every 10s
	ctx := context.Background()
	operator := kit.NewClient() // another process, sharing Redis and the clock

	copied, err := copyRows(ctx, kit.Client().Lock("rows"), 10, func(i int) {
		if i == 3 {
			// While batch 3 runs, an operator force-unlocks the lock.
			ok, err := operator.Lock("rows").ForceUnlock(ctx)
			require.NoError(t, err)
			require.True(t, ok)
		}
		kit.Advance(4 * time.Second) // each batch takes 4s
	})
	// Batch 3 runs from 12s to 16s, batch 4 from 16s to 20s: the renewal
	// due at 20s finds the lock gone, Lost is closed before batch 4's
	// Advance returns, and copyRows stops before batch 5.
	require.ErrorIs(t, err, client.ErrLockLost)
	assert.Equal(t, 5, copied)
}

// runJob is code under test for recipe 2: it takes the lock with a fixed
// lease, does the job and unlocks.
func runJob(ctx context.Context, l *client.Lock, lease time.Duration, job func()) error {
	if err := l.LockLease(ctx, lease); err != nil {
		return err
	}
	job()
	return l.Unlock(ctx)
}

// Recipe 2: my code's lease is long enough.
func TestRecipeMyCodesLeaseIsLongEnough(t *testing.T) {
	defer wallLimit(t, time.Now())
	for _, tc := range []struct {
		lease   time.Duration
		enough  bool
		comment string
	}{
		{30 * time.Second, false, "a 30s lease, a 40s job: another owner gets in at 30s"},
		{time.Minute, true, "a 1m lease, a 40s job: nobody else gets in"},
	} {
		t.Run(tc.lease.String(), func(t *testing.T) {
			kit := wardentest.New(t)
			ctx := context.Background()
			other := kit.NewClient().Lock("nightly")
			var otherGotIn bool
			err := runJob(ctx, kit.Client().Lock("nightly"), tc.lease, func() {
				kit.Advance(35 * time.Second) // the job is 35s in...
				ok, err := other.TryLock(ctx)
				require.NoError(t, err)
				otherGotIn = ok
				kit.Advance(5 * time.Second) // ...and takes 40s in all
			})
			assert.Equal(t, !tc.enough, otherGotIn, tc.comment)
			if tc.enough {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, client.ErrNotHeld, "the job's Unlock finds the lock is not its own")
				require.NoError(t, other.Unlock(ctx))
			}
		})
	}
}

// holdAndWork is code under test for recipe 3: it holds a watchdog lock
// while work runs, and reports whether the lock stayed held throughout.
func holdAndWork(ctx context.Context, l *client.Lock, work func()) error {
	if err := l.Lock(ctx); err != nil {
		return err
	}
	work()
	select {
	case <-l.Lost():
		_ = l.Unlock(ctx)
		return client.ErrLockLost
	default:
	}
	return l.Unlock(ctx)
}

// Recipe 3: my code survives a Redis restart.
func TestRecipeMyCodeSurvivesRedisRestart(t *testing.T) {
	defer wallLimit(t, time.Now())
	t.Run("with its data", func(t *testing.T) {
		kit := wardentest.New(t)
		ctx := context.Background()
		err := holdAndWork(ctx, kit.Client().Lock("index"), func() {
			kit.Advance(15 * time.Second)
			kit.RestartRedis(true) // the lock's key is still there
			kit.Advance(2 * time.Minute)
			ttl, err := kit.Redis().PTTL(ctx, "index").Result()
			require.NoError(t, err)
			assert.Greater(t, ttl, 20*time.Second, "renewals went on after the restart")
		})
		require.NoError(t, err)
	})
	t.Run("without its data", func(t *testing.T) {
		kit := wardentest.New(t)
		ctx := context.Background()
		other := kit.NewClient().Lock("index")
		err := holdAndWork(ctx, kit.Client().Lock("index"), func() {
			kit.Advance(15 * time.Second)
			kit.RestartRedis(false) // the lock's key is gone
			kit.Advance(10 * time.Second)
			ok, err := other.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok, "the restarted Redis let another owner in")
		})
		require.ErrorIs(t, err, client.ErrLockLost, "the holder was told it lost the lock")
		require.NoError(t, other.Unlock(ctx))
	})
}

// refreshOrSkip is code under test for recipe 4: it waits up to wait for
// the lock, refreshes under it, and skips the refresh when another owner
// keeps the lock all that time.
func refreshOrSkip(ctx context.Context, l *client.Lock, wait time.Duration, refresh func()) (bool, error) {
	ok, err := l.TryLockWait(ctx, wait, 0)
	if err != nil || !ok {
		return false, err
	}
	defer func() { _ = l.Unlock(context.WithoutCancel(ctx)) }()
	refresh()
	return true, nil
}

// Recipe 4: my code waits its turn, and gives up in time.
func TestRecipeMyCodeWaitsItsTurn(t *testing.T) {
	defer wallLimit(t, time.Now())
	type outcome struct {
		refreshed bool
		err       error
	}
	for _, tc := range []struct {
		name      string
		heldFor   time.Duration
		refreshed bool
	}{
		{"the holder keeps the lock past the wait", time.Minute, false},
		{"the holder lets go within the wait", 5 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kit := wardentest.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			holder := kit.NewClient().Lock("cache")
			require.NoError(t, holder.Lock(ctx))

			done := make(chan outcome, 1)
			go func() {
				ok, err := refreshOrSkip(ctx, kit.Client().Lock("cache"), 10*time.Second, func() {})
				done <- outcome{ok, err}
			}()
			// The call runs on its own goroutine: wait until it waits in
			// the engine before moving the time, or its 10s would count
			// from a later moment.
			kit.WaitWaiters("cache", 1)

			if tc.heldFor < 10*time.Second {
				kit.Advance(tc.heldFor)
				require.NoError(t, holder.Unlock(ctx))
				kit.Advance(0) // the unlock's message wakes the waiter
			} else {
				kit.Advance(10 * time.Second) // the wait runs out
			}
			select {
			case got := <-done:
				require.NoError(t, got.err)
				assert.Equal(t, tc.refreshed, got.refreshed)
			case <-time.After(5 * time.Second): // real time: its goroutine need only be scheduled
				t.Fatal("the code under test still waits")
			}
			kit.WaitWaiters("cache", 0)
			if !tc.refreshed {
				require.NoError(t, holder.Unlock(ctx))
			}
		})
	}
}

// wallLimit fails the test if it took more than a second of wall time
// since start (defer it first).
func wallLimit(t *testing.T, start time.Time) {
	t.Helper()
	// The tests move far more of the kit's time than they may take of the
	// wall's: the bound shows the time was the kit's, with room for a loaded
	// machine.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v of wall time, want under 15s", d)
	}
	t.Logf("wall time %v", time.Since(start).Round(time.Millisecond))
}
