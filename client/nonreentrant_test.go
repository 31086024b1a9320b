package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// nonReentrantKinds are the two non-reentrant locks, by the Client method
// that makes them.
var nonReentrantKinds = []struct {
	kind string
	make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
}{
	{"nonreentrant", (*client.Client).NonReentrantLock},
	{"nonreentrant-fair", (*client.Client).NonReentrantFairLock},
}

// A second acquire by the owner that holds a non-reentrant lock fails at
// once with ErrAlreadyHeld, through every acquire call, whether the holding
// is in watchdog mode or has a fixed lease: it does not wait (not even a
// Lock without deadline), adds no hold (the count in Redis stays 1, one
// Unlock frees the lock), leaves the lease as it was and takes no place in
// a fair lock's queue. Other owners contend as for Lock and FairLock.
func TestNonReentrantLockRefusesItsHolder(t *testing.T) {
	for _, k := range nonReentrantKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			name := "nr:" + k.kind
			c := e.newClient(t)
			l := k.make(c, name)
			other := k.make(e.newClient(t), name)

			refusedFor := func(h *client.Lock, what string, call func() error) {
				t.Helper()
				start := time.Now()
				err := call()
				assert.ErrorIs(t, err, client.ErrAlreadyHeld, what)
				assert.NotErrorIs(t, err, client.ErrNotObtained, what)
				assert.Less(t, time.Since(start), 2*time.Second, "%s: at once, without waiting", what)
				assert.Equal(t, "1", e.rdb.HGet(ctx, name, h.Owner()).Val(), "%s: the count in Redis stays 1", what)
				assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name)).Val(), "%s: no place in a queue", what)
			}
			refused := func(what string, call func() error) { t.Helper(); refusedFor(l, what, call) }
			tryRefused := func(h *client.Lock, what string, call func() (bool, error)) {
				t.Helper()
				refusedFor(h, what, func() error {
					ok, err := call()
					assert.False(t, ok, what)
					return err
				})
			}

			// Watchdog mode.
			require.NoError(t, l.Lock(ctx))
			blocking, cancel := context.WithCancel(context.Background()) // no deadline: Lock would wait forever
			defer cancel()
			refused("Lock", func() error { return l.Lock(blocking) })
			refused("LockLease", func() error { return l.LockLease(ctx, time.Minute) })
			tryRefused(l, "TryLock", func() (bool, error) { return l.TryLock(ctx) })
			tryRefused(l, "TryLockWait", func() (bool, error) { return l.TryLockWait(ctx, 5*time.Second, time.Minute) })
			refused("Do", func() error {
				return l.Do(ctx, func(context.Context) error { t.Error("Do ran fn while already held"); return nil })
			})
			assert.LessOrEqual(t, e.rdb.PTTL(ctx, name).Val(), watchdog, "the refused LockLease left the watchdog lease")
			n, err := l.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			ok, err := other.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "another owner is refused while held")

			// The holding is still renewed, and one Unlock frees the lock.
			e.advance(2 * watchdog)
			n, err = l.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "renewed past its watchdog timeout")
			assert.False(t, isClosed(l.Lost()), "the holding was not lost")
			require.NoError(t, l.Unlock(ctx))
			locked, err := l.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "one Unlock freed it")
			if err := l.Unlock(ctx); k.kind != "nonreentrant-fair" { // a fair lock's late unlock succeeds (SPEC §3)
				assert.ErrorIs(t, err, client.ErrNotHeld)
			}

			// A fixed lease: the refused watchdog acquire does not turn it
			// into a renewed one.
			require.NoError(t, l.LockLease(ctx, time.Minute))
			refused("Lock on a fixed lease", func() error { return l.Lock(ctx) })
			assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 50*time.Second, "the lease is as it was")

			// Another owner waits, as for Lock or FairLock, and gets it at
			// the unlock.
			got := inBackground(t, other.Lock)
			eventually(t, 5*time.Second, func() bool {
				return len(e.rdb.PubSubChannels(ctx, redisio.LockChannel(name)+"*").Val()) > 0
			}, "the other owner waits on the lock's channel")
			require.NoError(t, l.Unlock(ctx))
			r := await.Value(t, got, 5*time.Second, "the other owner, after the unlock")
			require.NoError(t, r.err)
			tryRefused(other, "the other owner's TryLock", func() (bool, error) { return other.TryLock(ctx) })
			require.NoError(t, other.Unlock(ctx))
			assert.Zero(t, e.rdb.Exists(ctx, name).Val())
		})
	}
}
