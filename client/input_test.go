package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

func TestBadInputIsRejectedBeforeRedis(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		c := e.newClient(t)
		bad := []struct {
			what string
			call func() error
		}{
			{"empty name", func() error { return c.Lock("").Lock(ctx) }},
			{"name over 64 KiB", func() error { _, err := c.Lock(strings.Repeat("x", 64<<10+1)).TryLock(ctx); return err }},
			{"empty owner", func() error { return c.Lock("x", client.WithOwner("")).Lock(ctx) }},
			{"zero lease", func() error { return c.Lock("x").LockLease(ctx, 0) }},
			{"negative lease", func() error { _, err := c.Lock("x").TryLockWait(ctx, 0, -time.Second); return err }},
			{"sub-ms lease", func() error { return c.Lock("x").LockLease(ctx, time.Microsecond) }},
			{"negative wait", func() error { _, err := c.Lock("x").TryLockWait(ctx, -1, time.Second); return err }},
			{"nil handle", func() error { var l *client.Lock; return l.Lock(ctx) }},
			{"nil handle, try", func() error { var l *client.Lock; _, err := l.TryLock(ctx); return err }},
			{"nil handle, try with wait", func() error { var l *client.Lock; _, err := l.TryLockWait(ctx, time.Second, 0); return err }},
			{"nil handle, unlock", func() error { var l *client.Lock; return l.Unlock(ctx) }},
			{"nil fn", func() error { return c.Lock("x").Do(ctx, nil) }},
			{"unlock with bad name", func() error { return c.Lock("").Unlock(ctx) }},
			{"query with bad name", func() error { _, err := c.Lock("").IsLocked(ctx); return err }},
		}
		for _, b := range bad {
			err := b.call()
			require.ErrorIs(t, err, client.ErrInvalidArgument, b.what)
		}
		assert.Zero(t, e.rdb.DBSize(ctx).Val(), "nothing was written")

		l := c.Lock("nil-option", nil)
		assert.NotEmpty(t, l.Owner(), "a nil option changes nothing")
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	})
}

func TestBadOptionsAreRejected(t *testing.T) {
	e := miniEnv(t)
	for _, opt := range []client.Option{
		client.WithWatchdogTimeout(10 * time.Millisecond),
		client.WithWatchdogTimeout(30500 * time.Microsecond),
		client.WithClock(nil),
		client.WithActorSystem(nil),
		client.WithLogger(nil),
		client.WithClientID(""),
		client.WithIdleTimeout(0),
		client.WithReplicaSync(0, time.Second),
		client.WithReplicaSync(1, 0),
		client.WithReplicaSync(1, 4*time.Second),
		nil,
	} {
		c, err := client.New(e.rdb, opt)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.Nil(t, c)
	}
	_, err := client.New(nil)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
}
