package client_test

import (
	"context"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

func TestBadInputIsRejectedBeforeRedis(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
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
			{"zero extend", func() error { return c.Lock("x").Extend(ctx, 0) }},
			{"sub-ms extend", func() error { return c.FairLock("x").Extend(ctx, 999*time.Microsecond) }},
			{"negative extend", func() error { return c.ReadWriteLock("x").ReadLock().Extend(ctx, -time.Second) }},
			{"sub-ms fenced extend", func() error { return c.FencedLock("x").Extend(ctx, time.Microsecond) }},
			{"sub-ms non-reentrant extend", func() error { return c.NonReentrantLock("x").Extend(ctx, time.Microsecond) }},
			{"sub-ms multilock extend", func() error { return client.NewMultiLock(c.Lock("x")).Extend(ctx, time.Microsecond) }},
			{"sub-ms redlock extend", func() error { return client.NewRedLock(c.Lock("x")).Extend(ctx, time.Microsecond) }},
			{"nil handle, extend", func() error { var l *client.Lock; return l.Extend(ctx, time.Second) }},
			{"non-reentrant, empty name", func() error { return c.NonReentrantLock("").Lock(ctx) }},
			{"non-reentrant fair, sub-ms lease", func() error { return c.NonReentrantFairLock("x").LockLease(ctx, time.Microsecond) }},
		}
		for _, b := range bad {
			err := b.call()
			require.ErrorIs(t, err, client.ErrInvalidArgument, b.what)
			if strings.Contains(b.what, "extend") && !strings.Contains(b.what, "nil") {
				assert.ErrorContains(t, err, "lease", "%s: the error names the field", b.what)
			}
		}
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")

		l := c.Lock("nil-option", nil)
		assert.NotEmpty(t, l.Owner(), "a nil option changes nothing")
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	})
}

func TestBadOptionsAreRejected(t *testing.T) {
	t.Parallel()
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

// TestNilHandlesAreRejected calls every exported method of every handle
// that is nil, a zero value, or was made by a nil or zero *Client: each one that returns an error
// returns ErrInvalidArgument, none panics, and the handles a nil Client
// makes are checked the same way.
func TestNilHandlesAreRejected(t *testing.T) {
	t.Parallel()
	var nilClient *client.Client
	zeroClient := &client.Client{}
	rw := nilClient.ReadWriteLock("x")
	handles := map[string]any{
		"nil *Client":                      nilClient,
		"nil *Lock":                        (*client.Lock)(nil),
		"nil *ReadWriteLock":               (*client.ReadWriteLock)(nil),
		"nil *FencedLock":                  (*client.FencedLock)(nil),
		"nil *Semaphore":                   (*client.Semaphore)(nil),
		"nil *PermitExpirableSemaphore":    (*client.PermitExpirableSemaphore)(nil),
		"nil *CountDownLatch":              (*client.CountDownLatch)(nil),
		"nil *MultiLock":                   (*client.MultiLock)(nil),
		"nil *RedLock":                     (*client.RedLock)(nil),
		"nil client's Lock":                nilClient.Lock("x"),
		"nil client's FairLock":            nilClient.FairLock("x"),
		"nil client's SpinLock":            nilClient.SpinLock("x"),
		"nil client's NonReentrantLock":    nilClient.NonReentrantLock("x"),
		"nil client's NonReentrantFair":    nilClient.NonReentrantFairLock("x"),
		"nil client's FencedLock":          nilClient.FencedLock("x"),
		"nil client's ReadLock":            rw.ReadLock(),
		"nil client's WriteLock":           rw.WriteLock(),
		"nil client's Semaphore":           nilClient.Semaphore("x"),
		"nil client's permit semaphore":    nilClient.PermitExpirableSemaphore("x"),
		"nil client's CountDownLatch":      nilClient.CountDownLatch("x"),
		"MultiLock of a nil client's Lock": client.NewMultiLock(nilClient.Lock("x")),
		"RedLock of a nil client's Lock":   client.NewRedLock(nilClient.Lock("x")),
		"nil *StripedLock":                 (*client.StripedLock)(nil),
		"nil client's GroupLock":           nilClient.GroupLock("x", "a", "b"),
		"nil client's StripedLock":         nilClient.StripedLock("x", 16),
		"nil client's stripe":              nilClient.StripedLock("x", 16).For("x"),
		"nil client's stripes":             nilClient.StripedLock("x", 16).ForKeys("x", "y"),
		"nil StripedLock's stripe":         (*client.StripedLock)(nil).For("x"),
		// Zero values, made without their constructors.
		"zero Client":                    zeroClient,
		"zero Client's Lock":             zeroClient.Lock("x"),
		"zero Client's GroupLock":        zeroClient.GroupLock("x", "a"),
		"zero Client's Semaphore":        zeroClient.Semaphore("x"),
		"zero Client's permit semaphore": zeroClient.PermitExpirableSemaphore("x"),
		"zero Client's CountDownLatch":   zeroClient.CountDownLatch("x"),
		"zero Client's FencedLock":       zeroClient.FencedLock("x"),
		"zero Client's StripedLock":      zeroClient.StripedLock("x", 4),
		"zero Lock":                      &client.Lock{},
		"zero FencedLock":                &client.FencedLock{},
		"zero Semaphore":                 &client.Semaphore{},
		"zero PermitExpirableSemaphore":  &client.PermitExpirableSemaphore{},
		"zero CountDownLatch":            &client.CountDownLatch{},
		"zero ReadWriteLock":             &client.ReadWriteLock{},
		"zero MultiLock":                 &client.MultiLock{},
		"zero RedLock":                   &client.RedLock{},
		"zero StripedLock":               &client.StripedLock{},
		"zero StripedLock's stripe":      (&client.StripedLock{}).For("x"),
		"zero StripedLock's stripes":     (&client.StripedLock{}).ForKeys("x", "y"),
	}
	calls := 0
	for what, h := range handles {
		v := reflect.ValueOf(h)
		for i := range v.NumMethod() {
			m := v.Type().Method(i)
			calls++
			out := callWithPlainArgs(t, what+"."+m.Name, v.Method(i))
			if n := len(out); n > 0 && out[n-1].Type() == reflect.TypeFor[error]() {
				err, _ := out[n-1].Interface().(error)
				assert.ErrorIs(t, err, client.ErrInvalidArgument, "%s.%s", what, m.Name)
			}
		}
	}
	assert.Nil(t, (*client.Lock)(nil).Lost(), "a nil handle's Lost never fires")
	assert.PanicsWithError(t, "warden: invalid argument: lock: nil handle",
		func() { (*client.Lock)(nil).Locker().Lock() }, "Locker panics with the error, as documented")
	assert.Greater(t, calls, 100, "every method was called")
}

// callWithPlainArgs calls m with a background context, 1 s durations, an
// hour from now for times, 1 for counts (int64 or int), "x" for strings and
// a no-op function, and fails t if it
// panics.
func callWithPlainArgs(t *testing.T, what string, m reflect.Value) (out []reflect.Value) {
	t.Helper()
	args := make([]reflect.Value, m.Type().NumIn())
	for i := range args {
		switch in := m.Type().In(i); {
		case in == reflect.TypeFor[context.Context]():
			args[i] = reflect.ValueOf(context.Background())
		case in == reflect.TypeFor[time.Duration]():
			args[i] = reflect.ValueOf(time.Second)
		case in == reflect.TypeFor[time.Time]():
			args[i] = reflect.ValueOf(time.Now().Add(time.Hour))
		case in.Kind() == reflect.Int64:
			args[i] = reflect.ValueOf(int64(1))
		case in.Kind() == reflect.Int:
			args[i] = reflect.ValueOf(1)
		case in.Kind() == reflect.String:
			args[i] = reflect.ValueOf("x")
		case in.Kind() == reflect.Func:
			args[i] = reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
				return []reflect.Value{reflect.Zero(in.Out(0))}
			})
		case in.Kind() == reflect.Slice && m.Type().IsVariadic() && i == len(args)-1:
			args[i] = reflect.MakeSlice(in, 0, 0)
		default:
			t.Fatalf("%s: no plain argument for %v", what, in)
		}
	}
	assert.NotPanics(t, func() {
		if m.Type().IsVariadic() {
			out = m.CallSlice(args)
		} else {
			out = m.Call(args)
		}
	}, what)
	return out
}

// TestLeasesBetweenMillisecondsAreRoundedUp: a lease that is not a whole
// number of milliseconds (what time.Until gives) is accepted and held for
// the next whole millisecond, by locks and by permits alike; one under
// 1ms is still refused.
func TestLeasesBetweenMillisecondsAreRoundedUp(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		const lease = 20*time.Second + 300*time.Microsecond

		l := c.Lock("rounded")
		require.NoError(t, l.LockLease(ctx, lease))
		pttl := e.rdb.PTTL(ctx, "rounded").Val()
		assert.Greater(t, pttl, 19*time.Second, "held for the lease")
		assert.LessOrEqual(t, pttl, 20*time.Second+time.Millisecond, "rounded up to the next millisecond, no further")
		ok, err := c.FairLock("rounded-fair").TryLockWait(ctx, 0, lease)
		require.NoError(t, err)
		assert.True(t, ok)

		p := c.PermitExpirableSemaphore("rounded-permits")
		set(t, p.TrySetPermits, 1)
		id, err := p.Acquire(ctx, lease)
		require.NoError(t, err)
		raw, err := hex.DecodeString(id)
		require.NoError(t, err)
		expiry := e.rdb.ZScore(ctx, "{rounded-permits}:timeout", string(raw)).Val()
		now := float64(e.clk.Now().UnixMilli())
		assert.InDelta(t, now+20_001, expiry, 1_000, "the permit's expiry is the rounded lease from now")
		ok, err = p.UpdateLease(ctx, id, lease)
		require.NoError(t, err)
		assert.True(t, ok)

		err = l.LockLease(ctx, 999*time.Microsecond)
		require.ErrorIs(t, err, client.ErrInvalidArgument, "under 1ms is still refused")
	})
}
