package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

// Every error a user meets is one line that starts with "warden: " and
// names the lock (or, for bad input, the field), and still matches its
// sentinels and the context's error with errors.Is.
func TestErrorTextIsOneLineWithTheName(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	c, _, _ := ownSystemClient(t, rdb, client.WithWatchdogTimeout(30*time.Second))
	ctx := testCtx(t)

	// A Redis that refuses connections: a port that was just free.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	deadRdb := redis.NewClient(&redis.Options{Addr: deadAddr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = deadRdb.Close() })
	dead, _, _ := ownSystemClient(t, deadRdb)

	held := func(t *testing.T, name string) {
		t.Helper()
		require.NoError(t, c.Lock(name).Lock(ctx))
		t.Cleanup(func() { _, _ = c.Lock(name).ForceUnlock(ctx) })
	}
	errLost := errors.New("the caller's own reason")

	tests := []struct {
		path  string
		call  func(t *testing.T) error
		text  []string // in the message, besides the "warden: " prefix
		match []error  // errors.Is targets
	}{
		{"Lock until ctx's deadline", func(t *testing.T) error {
			held(t, "err:deadline")
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return c.Lock("err:deadline").Lock(cctx)
		}, []string{"lock err:deadline not obtained", "context deadline exceeded"},
			[]error{client.ErrNotObtained, context.DeadlineExceeded}},

		{"Lock until ctx is cancelled with a cause", func(t *testing.T) error {
			held(t, "err:cause")
			cctx, cancel := context.WithCancelCause(ctx)
			time.AfterFunc(100*time.Millisecond, func() { cancel(errLost) })
			return c.FairLock("err:cause").Lock(cctx)
		}, []string{"fair lock err:cause not obtained", "context canceled", "the caller's own reason"},
			[]error{client.ErrNotObtained, context.Canceled, errLost}},

		{"TryLock with ctx cancelled", func(t *testing.T) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := c.Lock("err:try").TryLock(cctx)
			return err
		}, []string{"lock err:try not obtained", "context canceled"}, []error{client.ErrNotObtained, context.Canceled}},

		{"TryLockWait cancelled while it waits", func(t *testing.T) error {
			held(t, "err:trywait")
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.Lock("err:trywait").TryLockWait(cctx, time.Minute, 0)
			return err
		}, []string{"lock err:trywait not obtained", "context deadline exceeded"},
			[]error{client.ErrNotObtained, context.DeadlineExceeded}},

		{"Semaphore.Acquire until ctx's deadline", func(t *testing.T) error {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return c.Semaphore("err:sem").Acquire(cctx, 2)
		}, []string{"2 permits of semaphore err:sem not obtained", "context deadline exceeded"},
			[]error{client.ErrNotObtained, context.DeadlineExceeded}},

		{"Semaphore.Acquire of one permit until ctx's deadline", func(t *testing.T) error {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return c.Semaphore("err:sem1").Acquire(cctx, 1)
		}, []string{"1 permit of semaphore err:sem1 not obtained"}, []error{client.ErrNotObtained}},

		{"PermitExpirableSemaphore.AcquirePermits until ctx's deadline", func(t *testing.T) error {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.PermitExpirableSemaphore("err:ps").AcquirePermits(cctx, 3, 0)
			return err
		}, []string{"3 permits of permit-expirable semaphore err:ps not obtained"}, []error{client.ErrNotObtained}},

		{"PermitExpirableSemaphore.Acquire until ctx's deadline", func(t *testing.T) error {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.PermitExpirableSemaphore("err:ps1").Acquire(cctx, 0)
			return err
		}, []string{"1 permit of permit-expirable semaphore err:ps1 not obtained"}, []error{client.ErrNotObtained}},

		{"CountDownLatch.Await until ctx's deadline", func(t *testing.T) error {
			d := c.CountDownLatch("err:latch")
			set(t, d.TrySetCount, 1)
			t.Cleanup(func() { _ = d.CountDown(ctx) })
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			return d.Await(cctx)
		}, []string{"count-down latch err:latch not obtained", "context deadline exceeded"},
			[]error{client.ErrNotObtained, context.DeadlineExceeded}},

		{"Unlock of a lock not held", func(t *testing.T) error {
			return c.Lock("err:notheld").Unlock(ctx)
		}, []string{"lock not held", "err:notheld"}, []error{client.ErrNotHeld}},

		{"a Redis error", func(t *testing.T) error {
			require.NoError(t, rdb.Set(ctx, "err:wrongtype", "x", time.Minute).Err())
			_, err := c.Lock("err:wrongtype").TryLock(ctx)
			return err
		}, []string{"acquire lock err:wrongtype", "WRONGTYPE"}, nil},

		{"Redis unreachable: TryLock", func(t *testing.T) error {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := dead.Lock("d:a").TryLock(cctx)
			return err
		}, []string{"acquire lock d:a", "connection refused"}, nil},

		{"Redis unreachable: IsLocked", func(t *testing.T) error {
			_, err := dead.Lock("d:b").IsLocked(ctx)
			return err
		}, []string{"is locked d:b", "connection refused"}, nil},

		{"Redis unreachable: Semaphore.TrySetPermits", func(t *testing.T) error {
			_, err := dead.Semaphore("d:s").TrySetPermits(ctx, 1)
			return err
		}, []string{"semaphore try set permits d:s", "connection refused"}, nil},

		{"an invalid lease", func(t *testing.T) error {
			return c.Lock("err:lease").LockLease(ctx, -time.Second)
		}, []string{"invalid argument", "lease"}, []error{client.ErrInvalidArgument}},

		{"an empty name", func(t *testing.T) error {
			return c.Lock("").Lock(ctx)
		}, []string{"invalid argument", "name"}, []error{client.ErrInvalidArgument}},

		{"MultiLock.Unlock of members not held", func(t *testing.T) error {
			return client.NewMultiLock(c.Lock("err:m1"), c.Lock("err:m2")).Unlock(ctx)
		}, []string{"err:m1", "member err:m2", "lock not held"}, []error{client.ErrNotHeld}},

		{"MultiLock.Extend of members not held", func(t *testing.T) error {
			return client.NewMultiLock(c.Lock("err:e1"), c.Lock("err:e2")).Extend(ctx, time.Minute)
		}, []string{"extend", "member err:e1", "lock not held"}, []error{client.ErrNotHeld}},

		{"MultiLock over a non-reentrant member it holds", func(t *testing.T) error {
			m := client.NewMultiLock(c.NonReentrantLock("err:nr"))
			require.NoError(t, m.Lock(ctx))
			t.Cleanup(func() { _ = m.Unlock(ctx) })
			return m.Lock(ctx)
		}, []string{"member err:nr", "already held"}, []error{client.ErrAlreadyHeld}},

		{"MultiLock with an invalid member", func(t *testing.T) error {
			return client.NewMultiLock(c.Lock("ok"), c.Lock("")).Lock(ctx)
		}, []string{"member 1", "invalid argument", "name"}, []error{client.ErrInvalidArgument}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := tt.call(t)
			require.Error(t, err)
			msg := err.Error()
			t.Log(msg)
			assert.NotContains(t, msg, "\n", "one line")
			assert.True(t, strings.HasPrefix(msg, "warden: "), "prefixed: %q", msg)
			assert.Equal(t, 1, strings.Count(msg, "warden: "), "one prefix: %q", msg)
			for _, s := range tt.text {
				assert.Contains(t, msg, s)
			}
			for _, target := range tt.match {
				assert.ErrorIs(t, err, target)
			}
		})
	}
}

// A composite error (a RedLock's or MultiLock's members, a Do's loss and
// unlock, several invalid arguments, a cause that is a warden error) has
// one "warden: " prefix however many warden errors it holds, and still
// matches each of them.
func TestCompositeErrorsHaveOnePrefix(t *testing.T) {
	_, clients := nodes(t, 3)
	c := clients[0]
	ctx := testCtx(t)
	errMine := errors.New("the caller's own failure")

	tests := []struct {
		what  string
		call  func(t *testing.T) error
		text  []string
		match []error
	}{
		{"RedLock.Unlock of a lock not held", func(t *testing.T) error {
			return client.NewRedLock(members(clients, "comp:red")...).Unlock(ctx)
		}, []string{"redlock comp:red: released on 0 of 3 masters: lock not held", "master 0: lock not held: lock comp:red",
			"master 2: lock not held"}, []error{client.ErrNotHeld}},

		{"RedLock.Extend of a lock not held", func(t *testing.T) error {
			return client.NewRedLock(members(clients, "comp:redext")...).Extend(ctx, time.Second)
		}, []string{"redlock comp:redext: extend: lock not held"}, []error{client.ErrNotHeld}},

		{"RedLock.Extend with members lost", func(t *testing.T) error {
			r := client.NewRedLock(members(clients, "comp:redlost")...)
			require.NoError(t, r.LockLease(ctx, time.Minute))
			for _, o := range clients {
				_, err := o.Lock("comp:redlost").ForceUnlock(ctx)
				require.NoError(t, err)
			}
			return r.Extend(ctx, time.Minute)
		}, []string{"redlock comp:redlost: extended on 0 of 3 masters: lock not held", "master comp:redlost: lock not held"},
			[]error{client.ErrNotHeld}},

		{"MultiLock.Unlock of members not held", func(t *testing.T) error {
			return client.NewMultiLock(members(clients, "comp:multi")...).Unlock(ctx)
		}, []string{"multilock comp:multi, comp:multi, comp:multi: unlock: member comp:multi: lock not held"},
			[]error{client.ErrNotHeld}},

		{"GroupLock.Unlock not held", func(t *testing.T) error {
			return c.GroupLock("comp:group", "a", "b").Unlock(ctx)
		}, []string{"lock not held", "group lock comp:group"}, []error{client.ErrNotHeld}},

		{"Do whose lock was lost, fn returning nothing", func(t *testing.T) error {
			return c.Lock("comp:do").Do(ctx, func(ctx context.Context) error {
				_, err := c.Lock("comp:do").ForceUnlock(ctx)
				return err
			})
		}, []string{"lock comp:do lost: unlock: lock not held: lock comp:do"}, []error{client.ErrLockLost, client.ErrNotHeld}},

		{"Do whose lock was lost, fn returning a warden error", func(t *testing.T) error {
			return c.Lock("comp:do2").Do(ctx, func(ctx context.Context) error {
				_, err := c.Lock("comp:do2").ForceUnlock(ctx)
				require.NoError(t, err)
				return c.Lock("comp:other").Unlock(ctx) // warden: lock not held: ...
			})
		}, []string{"lock comp:do2 lost: unlock: lock not held", "lock comp:other"}, []error{client.ErrLockLost, client.ErrNotHeld}},

		{"Do whose fn fails and whose lock was lost", func(t *testing.T) error {
			return c.Lock("comp:do3").Do(ctx, func(ctx context.Context) error {
				_, err := c.Lock("comp:do3").ForceUnlock(ctx)
				require.NoError(t, err)
				return errMine
			})
		}, []string{"lock comp:do3 lost", "the caller's own failure"}, []error{client.ErrLockLost, errMine}},

		{"several invalid arguments", func(t *testing.T) error {
			_, _, err := c.PermitExpirableSemaphore("").TryAcquirePermits(ctx, 0, -time.Second, 0)
			return err
		}, []string{"invalid argument"}, []error{client.ErrInvalidArgument}},

		{"a wait cancelled with a warden error as its cause", func(t *testing.T) error {
			require.NoError(t, c.Lock("comp:cause").Lock(ctx))
			t.Cleanup(func() { _, _ = c.Lock("comp:cause").ForceUnlock(ctx) })
			cctx, cancel := context.WithCancelCause(ctx)
			time.AfterFunc(100*time.Millisecond, func() { cancel(client.ErrLockLost) })
			_, err := c.Lock("comp:cause").TryLockWait(cctx, time.Minute, 0)
			return err
		}, []string{"lock comp:cause not obtained: context canceled (cause: lock lost)"},
			[]error{client.ErrNotObtained, context.Canceled, client.ErrLockLost}},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			err := tt.call(t)
			require.Error(t, err)
			msg := err.Error()
			t.Log(msg)
			assert.NotContains(t, msg, "\n", "one line")
			assert.True(t, strings.HasPrefix(msg, "warden: "), "prefixed: %q", msg)
			assert.Equal(t, 1, strings.Count(msg, "warden:"), "one prefix: %q", msg)
			for _, s := range tt.text {
				assert.Contains(t, msg, s)
			}
			for _, target := range tt.match {
				assert.ErrorIs(t, err, target)
			}
		})
	}

	t.Run("RedLock with a majority out of reach", func(t *testing.T) {
		envs, clients := nodes(t, 3)
		envs[1].srv.Stop(t)
		envs[2].srv.Stop(t)
		err := client.NewRedLock(members(clients, "comp:down")...).Lock(ctx)
		require.Error(t, err)
		msg := err.Error()
		t.Log(msg)
		assert.Equal(t, 1, strings.Count(msg, "warden:"), "one prefix: %q", msg)
		assert.Contains(t, msg, "redlock comp:down: 2 of 3 masters failed, a majority is out of reach: master ")
	})
}
