package client_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redisproc"
	"github.com/warden-go/warden/internal/redistest"
)

// TestCloseAndReleaseReleasesEveryHold: CloseAndRelease frees every lock
// its handles hold, however many times reentered and of every kind, wakes
// a waiter of another client, leaves another owner's read hold alone, and
// counts a holding already lost as no error; the Client is closed after.
func TestCloseAndReleaseReleasesEveryHold(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c, other := e.newClient(t), e.newClient(t)

		plain := c.Lock("car-plain")
		require.NoError(t, plain.Lock(ctx))
		require.NoError(t, plain.Lock(ctx)) // reentered
		require.NoError(t, c.FairLock("car-fair").LockLease(ctx, time.Hour))
		_, err := c.FencedLock("car-fenced").LockToken(ctx)
		require.NoError(t, err)
		rw := c.ReadWriteLock("car-rw")
		require.NoError(t, rw.WriteLock().Lock(ctx))
		require.NoError(t, rw.ReadLock().Lock(ctx)) // the writer reads too
		require.NoError(t, c.ReadWriteLock("car-shared").ReadLock().Lock(ctx))
		otherReader := other.ReadWriteLock("car-shared").ReadLock()
		require.NoError(t, otherReader.Lock(ctx))
		gone := c.Lock("car-gone")
		require.NoError(t, gone.Lock(ctx))
		forced, err := other.Lock("car-gone").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, forced)

		waiter := inBackground(t, func(ctx context.Context) error { return other.Lock("car-plain").Lock(ctx) })
		eventually(t, 2*time.Second, func() bool {
			return len(e.rdb.PubSubChannels(ctx, "*car-plain*").Val()) == 1
		}, "the other client waits for car-plain")

		e.closing[c].Store(true)
		require.NoError(t, c.CloseAndRelease(ctx))

		for _, name := range []string{"car-fair", "car-fenced", "car-rw"} {
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "%s was released", name)
		}
		r := await.Value(t, waiter, 2*time.Second, "the other client's waiter, woken by the release")
		require.NoError(t, r.err)
		held, err := other.Lock("car-plain").IsLocked(ctx)
		require.NoError(t, err)
		assert.True(t, held, "the waiter holds car-plain")
		holds, err := otherReader.HoldCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, holds, "another owner's read hold is untouched")
		fields := e.rdb.HKeys(ctx, "car-shared").Val()
		assert.NotContains(t, fields, c.ReadWriteLock("car-shared").ReadLock().Owner())
		assert.Len(t, fields, 2, "mode and the other reader only")

		assert.ErrorIs(t, c.CloseAndRelease(ctx), client.ErrClosed, "closed once")
		assert.ErrorIs(t, c.Close(ctx), client.ErrClosed)
		assert.ErrorIs(t, plain.Lock(ctx), client.ErrClosed)
	})
}

// TestCloseAndReleaseReportsAFailedRelease: a release that fails (Redis is
// gone) is returned, and the Client still closes.
func TestCloseAndReleaseReportsAFailedRelease(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	require.NoError(t, c.Lock("car-down").LockLease(ctx, time.Hour))
	e.srv.Stop(t)
	e.closing[c].Store(true)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := c.CloseAndRelease(cctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "release car-down")
	assert.ErrorIs(t, c.Close(ctx), client.ErrClosed, "closed all the same")
}

// CloseAndRelease frees a lock for other processes even while this Client
// has waiters for it: the release does not hand it to one of them (each is
// answered ErrClosed), so nothing is left holding it until a lease ends.
func TestCloseAndReleaseGivesNoLockToItsOwnWaiters(t *testing.T) {
	t.Parallel()
	for _, k := range []struct {
		kind string
		make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
	}{
		{"lock", (*client.Client).Lock},
		{"fair", (*client.Client).FairLock},
		{"spin", (*client.Client).SpinLock},
	} {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			c := e.newClient(t)
			name := "close-release:" + k.kind
			require.NoError(t, k.make(c, name).Lock(ctx))
			errs := make(chan error, 4)
			for range 4 {
				go func() { errs <- k.make(c, name).Lock(ctx) }()
			}
			// Each waiter's first attempt is refused before it waits.
			eventually(t, 10*time.Second, func() bool { return evalshaCalls(t, e.rdb) >= 5 }, "four refused attempts")
			e.closing[c].Store(true)
			require.NoError(t, c.CloseAndRelease(ctx))
			for range 4 {
				select {
				case err := <-errs:
					assert.ErrorIs(t, err, client.ErrClosed)
				case <-time.After(10 * time.Second):
					t.Fatal("a waiter was not answered")
				}
			}
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the lock is free for other processes")
			assert.Empty(t, e.rdb.LRange(ctx, "redisson_lock_queue:{"+name+"}", 0, -1).Val(), "no place left in a queue")
		})
	}
}

// evalshaCalls is how many EVALSHA calls the server ran.
func evalshaCalls(t *testing.T, rdb *redis.Client) uint64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	rest, ok := redisproc.InfoFields(info)["cmdstat_evalsha"]
	if !ok {
		return 0
	}
	calls, _, err := redisproc.CommandStat(rest)
	require.NoError(t, err)
	return calls
}

// A lock whose requester gave up while its acquire was in flight is given
// back even when Close comes first: when the acquire's answer reaches the
// key actor as Close begins, when it comes only once the actor is
// stopping (the answer reaches no turn), and when Close cuts the
// give-back's unlock. Close releases nothing the Client holds, but this
// is nobody's: left in Redis, it would keep other processes waiting until
// its lease ran out.
func TestCloseGivesBackAnAcquireItsRequesterLeft(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		how string
		// answered is how long the acquire's answer waits once Close has
		// cancelled the engine's calls; cutGiveBack fails the give-back's
		// first unlock with that cancellation, as if it never reached Redis.
		answered    time.Duration
		cutGiveBack bool
	}{
		{how: "answered as Close begins"},
		{how: "answered once the actor stops", answered: 200 * time.Millisecond},
		{how: "give-back cut by Close", cutGiveBack: true},
	} {
		t.Run(tc.how, func(t *testing.T) {
			t.Parallel()
			e := realEnv(t)
			e.hooked = redistest.NewHooked(e.rdb)
			ctx := testCtx(t)
			c := e.newClient(t)
			name := "close-gives-back"
			landed, goOn, cutting := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var took atomic.Bool
			var cuts atomic.Int32
			e.hooked.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
				last, _ := sc.Args[len(sc.Args)-1].(string)
				switch {
				case sc.Acquires() && !took.Load():
					cmd := sc.Run()
					if cmd.Err() != nil || !took.CompareAndSwap(false, true) {
						return cmd // NOSCRIPT: the script is sent again
					}
					close(landed) // the lock is taken in Redis
					<-goOn
					if !tc.cutGiveBack {
						awaitDone(t, sc.Ctx, "Close cancels the engine's calls")
						time.Sleep(tc.answered)
					}
					return cmd
				case tc.cutGiveBack && strings.HasSuffix(last, ":cancel") && cuts.Add(1) == 1:
					close(cutting)
					awaitDone(t, sc.Ctx, "Close cancels the give-back")
					return redistest.Failed(sc.Ctx.Err())
				}
				return sc.Run()
			})
			wctx, cancel := context.WithCancel(ctx)
			got := make(chan error, 1)
			go func() {
				_, err := c.Lock(name).TryLockWait(wctx, time.Minute, 0)
				got <- err
			}()
			await.Value(t, landed, 10*time.Second, "the acquire reached Redis")
			cancel()
			select {
			case err := <-got:
				require.ErrorIs(t, err, context.Canceled, "the requester leaves at once")
			case <-time.After(10 * time.Second):
				t.Fatal("the requester was not answered")
			}
			if tc.cutGiveBack {
				close(goOn) // answered now: the give-back starts before Close
				await.Value(t, cutting, 10*time.Second, "the give-back's unlock")
			}
			e.closing[c].Store(true)
			closed := make(chan error, 1)
			go func() { closed <- c.Close(ctx) }()
			if !tc.cutGiveBack {
				close(goOn)
			}
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not return")
			}
			assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "the lock is free for other processes")
			if tc.cutGiveBack {
				assert.GreaterOrEqual(t, cuts.Load(), int32(2), "the give-back cut was made again")
			}
		})
	}
}

// awaitDone waits up to 10 s for ctx to end.
func awaitDone(t *testing.T, ctx context.Context, what string) {
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("not seen within 10s: %s", what)
	}
}
