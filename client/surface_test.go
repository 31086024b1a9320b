package client_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// mutexCase is one lock type seen through client.Mutex.
type mutexCase struct {
	kind string
	// setup makes the lock on name, on clients it starts on e with opts.
	setup func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup
}

// mutexSetup is a lock under test and what the tests need around it.
type mutexSetup struct {
	m client.Mutex
	// other contends with m, on a client of its own: it is refused while m
	// is held.
	other client.Mutex
	// keys are the Redis keys whose deletion loses m's holding.
	keys []string
	// closers are clients of m whose Close loses m's holding.
	closers []*client.Client
}

// mutexCases are every lock type: the reentrant, fair, spin, read, write,
// non-reentrant, non-reentrant fair, fenced and group locks, a
// StripedLock's ForKeys, a MultiLock over members on two clients and a
// RedLock over three (on one server, under three names).
var mutexCases = []mutexCase{
	{"lock", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.Lock(name), other: e.newClient(t).Lock(name), keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"fair", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.FairLock(name), other: e.newClient(t).FairLock(name), keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"spin", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.SpinLock(name), other: e.newClient(t).SpinLock(name), keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"read", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.ReadWriteLock(name).ReadLock(), other: e.newClient(t).ReadWriteLock(name).WriteLock(),
			keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"write", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.ReadWriteLock(name).WriteLock(), other: e.newClient(t).ReadWriteLock(name).ReadLock(),
			keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"nonreentrant", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.NonReentrantLock(name), other: e.newClient(t).NonReentrantLock(name), keys: []string{name},
			closers: []*client.Client{c}}
	}},
	{"nonreentrant-fair", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.NonReentrantFairLock(name), other: e.newClient(t).NonReentrantFairLock(name),
			keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"fenced", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.FencedLock(name), other: e.newClient(t).FencedLock(name), keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"multilock", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		a, b, o := e.newClient(t, opts...), e.newClient(t, opts...), e.newClient(t)
		return mutexSetup{
			m:     client.NewMultiLock(a.Lock(name+":a"), b.Lock(name+":b")),
			other: client.NewMultiLock(o.Lock(name+":a"), o.Lock(name+":b")),
			// One member lost, or one member's client closed, loses the set.
			keys: []string{name + ":b"}, closers: []*client.Client{b},
		}
	}},
	{"group", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		return mutexSetup{m: c.GroupLock(name, "a", "b"), other: e.newClient(t).GroupLock(name, "b", "c"),
			keys: []string{name}, closers: []*client.Client{c}}
	}},
	{"striped", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		c := e.newClient(t, opts...)
		s, o := c.StripedLock(name, 16), e.newClient(t).StripedLock(name, 16)
		// "a" and "b" are on stripes 12 and 5: a MultiLock over both.
		return mutexSetup{m: s.ForKeys("b", "a", "b"), other: o.ForKeys("a", "b"),
			keys: []string{s.Name("a")}, closers: []*client.Client{c}}
	}},
	{"redlock", func(t *testing.T, e *env, name string, opts ...client.Option) mutexSetup {
		var mine, theirs []*client.Lock
		var cs []*client.Client
		o := e.newClient(t)
		for _, n := range []string{name + ":1", name + ":2", name + ":3"} {
			c := e.newClient(t, opts...)
			cs = append(cs, c)
			mine, theirs = append(mine, c.Lock(n)), append(theirs, o.Lock(n))
		}
		return mutexSetup{m: client.NewRedLock(mine...), other: client.NewRedLock(theirs...),
			// Two of three masters lost, or their clients closed, lose the
			// majority.
			keys: []string{name + ":1", name + ":2"}, closers: cs[:2]}
	}},
}

// eachMutex runs fn for every lock type on real Redis.
func eachMutex(t *testing.T, fn func(t *testing.T, e *env, mc mutexCase)) {
	for _, mc := range mutexCases {
		t.Run(mc.kind, func(t *testing.T) { fn(t, realEnv(t), mc) })
	}
}

// isClosed reports whether ch is closed (or ready) now.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestEveryLockTypeIsAMutex drives every lock type through client.Mutex
// alone: Lock excludes a contender (TryLock false, TryLockWait false
// with a nil error when its wait runs out), Unlock lets it in, LockLease
// holds, Do runs fn under the lock and releases it, and Lost closes when
// the holding is lost (the lock's keys deleted behind its back).
func TestEveryLockTypeIsAMutex(t *testing.T) {
	eachMutex(t, func(t *testing.T, e *env, mc mutexCase) {
		ctx := testCtx(t)
		s := mc.setup(t, e, "mutex")

		require.NoError(t, s.m.Lock(ctx))
		ok, err := s.other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "TryLock of a contender while held")
		ok, err = s.other.TryLockWait(ctx, 100*time.Millisecond, 0)
		require.NoError(t, err, "a Try whose wait runs out is no error")
		assert.False(t, ok, "TryLockWait of a contender while held")
		require.NoError(t, s.m.Unlock(ctx))

		ok, err = s.other.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "TryLock of the contender after the unlock")
		require.NoError(t, s.other.Unlock(ctx))

		require.NoError(t, s.m.LockLease(ctx, time.Minute))
		ok, err = s.other.TryLock(ctx)
		require.NoError(t, err)
		assert.False(t, ok, "refused while held with a lease")
		require.NoError(t, s.m.Unlock(ctx))

		ran := false
		err = s.m.Do(ctx, func(ctx context.Context) error {
			ran = true
			ok, err := s.other.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "refused while Do runs fn")
			return nil
		})
		require.NoError(t, err)
		assert.True(t, ran, "Do ran fn")
		ok, err = s.other.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "free after Do")
		require.NoError(t, s.other.Unlock(ctx))

		ok, err = s.m.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		lost := s.m.Lost()
		assert.False(t, isClosed(lost), "not lost while held")
		require.NoError(t, e.rdb.Del(ctx, s.keys...).Err())
		await.Value(t, lost, 5*time.Second, "Lost, once the holding's keys were deleted")
		assert.ErrorIs(t, s.m.Unlock(ctx), client.ErrNotHeld, "the unlock of a lost holding")
		ok, err = s.m.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok, "a new holding")
		assert.False(t, isClosed(s.m.Lost()), "a new holding has a new channel")
		require.NoError(t, s.m.Unlock(ctx))
	})
}

// TestFencedLockHasEveryLockMethod: *FencedLock has every exported method
// of *Lock, with the same signature, and the forwarded ones work on a
// fenced lock in Redis (Lock and TryLock take tokens that Token reads).
func TestFencedLockHasEveryLockMethod(t *testing.T) {
	t.Parallel()
	lockT, fencedT := reflect.TypeFor[*client.Lock](), reflect.TypeFor[*client.FencedLock]()
	for i := range lockT.NumMethod() {
		m := lockT.Method(i)
		f, ok := fencedT.MethodByName(m.Name)
		if assert.True(t, ok, "FencedLock.%s", m.Name) {
			// Compare without the receiver.
			assert.Equal(t, methodSig(m.Type), methodSig(f.Type), "FencedLock.%s's signature", m.Name)
		}
	}

	e := realEnv(t)
	c, o := e.newClient(t), e.newClient(t)
	ctx := testCtx(t)
	var locker interface{ Lock(context.Context) error } = c.FencedLock("fl")
	f := locker.(*client.FencedLock)
	assert.Equal(t, "fl", f.Name())
	assert.NotEmpty(t, f.Owner())

	require.NoError(t, f.Lock(ctx))
	t1, err := f.Token(ctx)
	require.NoError(t, err)
	assert.Positive(t, t1)
	ok, err := f.TryLock(ctx)
	require.NoError(t, err)
	require.True(t, ok, "a reentry")
	assert.Equal(t, 2, get(t, f.HoldCount))
	assert.True(t, get(t, f.IsHeld))
	assert.True(t, get(t, f.IsLocked))
	assert.Positive(t, get(t, f.RemainTTL))
	other := o.FencedLock("fl")
	ok, err = other.TryLockWait(ctx, 50*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, f.Unlock(ctx))
	require.NoError(t, f.Unlock(ctx))
	assert.ErrorIs(t, f.Unlock(ctx), client.ErrNotHeld)
	_, err = f.RemainTTL(ctx)
	assert.ErrorIs(t, err, client.ErrNotLocked)

	require.NoError(t, f.LockLease(ctx, time.Minute))
	t2, err := f.Token(ctx)
	require.NoError(t, err)
	assert.Greater(t, t2, t1, "a new holding, a higher token")
	assert.NotNil(t, f.Lost())
	forced, err := other.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, forced)
	assert.False(t, get(t, f.IsLocked))
	require.ErrorIs(t, f.Unlock(ctx), client.ErrNotHeld)

	var t3 int64
	require.NoError(t, f.Do(ctx, func(ctx context.Context) error {
		t3, err = f.Token(ctx)
		return err
	}))
	assert.Greater(t, t3, t2)
	mu := f.Locker()
	mu.Lock()
	assert.True(t, get(t, f.IsHeld))
	mu.Unlock()
	assert.False(t, get(t, f.IsLocked))
}

// methodSig is a method's type without its receiver.
func methodSig(ft reflect.Type) string {
	var in, out []string
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i).String())
	}
	for i := range ft.NumOut() {
		out = append(out, ft.Out(i).String())
	}
	return reflect.ValueOf(in).String() + "->" + reflect.ValueOf(out).String() + map[bool]string{true: "...", false: ""}[ft.IsVariadic()]
}

// TestNilMutexesAreRejected calls every exported method of a nil
// *FencedLock, *MultiLock and *RedLock (and of a FencedLock made by a nil
// Client): none panics, each one that returns an error returns
// ErrInvalidArgument; and every Mutex method refuses a nil context with
// ErrInvalidArgument naming ctx.
func TestNilMutexesAreRejected(t *testing.T) {
	t.Parallel()
	var nilClient *client.Client
	handles := map[string]any{
		"nil *FencedLock":         (*client.FencedLock)(nil),
		"nil client's FencedLock": nilClient.FencedLock("x"),
		"nil *MultiLock":          (*client.MultiLock)(nil),
		"nil *RedLock":            (*client.RedLock)(nil),
	}
	for what, h := range handles {
		v := reflect.ValueOf(h)
		for i := range v.NumMethod() {
			m := v.Type().Method(i)
			out := callWithPlainArgs(t, what+"."+m.Name, v.Method(i))
			if n := len(out); n > 0 && out[n-1].Type() == reflect.TypeFor[error]() {
				err, _ := out[n-1].Interface().(error)
				assert.ErrorIs(t, err, client.ErrInvalidArgument, "%s.%s", what, m.Name)
			}
		}
	}
	assert.Nil(t, (*client.FencedLock)(nil).Lost())
	assert.Nil(t, (*client.MultiLock)(nil).Lost())

	e := realEnv(t)
	c := e.newClient(t)
	var nilCtx context.Context
	mutexes := map[string]client.Mutex{
		"fenced":    c.FencedLock("nilctx"),
		"multilock": client.NewMultiLock(c.Lock("nilctx")),
		"redlock":   client.NewRedLock(c.Lock("nilctx")),
	}
	for what, m := range mutexes {
		calls := map[string]error{"Lock": m.Lock(nilCtx), "LockLease": m.LockLease(nilCtx, time.Second),
			"Unlock": m.Unlock(nilCtx), "Do": m.Do(nilCtx, func(context.Context) error { return nil })}
		_, calls["TryLock"] = m.TryLock(nilCtx)
		_, calls["TryLockWait"] = m.TryLockWait(nilCtx, 0, 0)
		for name, err := range calls {
			assert.ErrorIs(t, err, client.ErrInvalidArgument, "%s.%s(nil)", what, name)
			assert.ErrorContains(t, err, "ctx", "%s.%s(nil)", what, name)
		}
	}
	assert.Zero(t, e.rdb.Exists(context.Background(), "nilctx").Val(), "nothing was taken")
}

// TestMultiLockLostClosesOnAMemberLoss: a MultiLock's Lost closes when one
// member's holding is lost, and not when the MultiLock is unlocked; a
// reentry keeps the holding's channel.
func TestMultiLockLostClosesOnAMemberLoss(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	m := client.NewMultiLock(c.Lock("ml:a"), c.Lock("ml:b"), c.Lock("ml:c"))
	require.NoError(t, m.Lock(ctx))
	lost := m.Lost()
	require.NoError(t, m.Lock(ctx), "a reentry")
	assert.Equal(t, lost, m.Lost(), "a reentry keeps the holding")
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Unlock(ctx))
	time.Sleep(2 * watchdog) // renewals would have told a loss by now
	assert.False(t, isClosed(lost), "an unlocked holding is not lost")
	next := m.Lost()
	assert.NotEqual(t, lost, next, "the next holding has its own channel")

	require.NoError(t, m.Lock(ctx))
	require.Equal(t, next, m.Lost())
	require.NoError(t, e.rdb.Del(ctx, "ml:b").Err())
	start := time.Now()
	await.Value(t, next, 3*time.Second, "the MultiLock's Lost after a member was lost")
	t.Logf("MultiLock's Lost closed %v after a member's key was deleted (watchdog %v)", time.Since(start), watchdog)
	err := m.Unlock(ctx)
	require.ErrorIs(t, err, client.ErrNotHeld, "the lost member")
	assert.NotContains(t, err.Error(), "\n", "one line")
	assert.True(t, strings.HasPrefix(err.Error(), "warden: multilock ml:a, ml:b, ml:c: unlock: member ml:b: "), "%q", err)
	assert.Zero(t, e.rdb.Exists(ctx, "ml:a", "ml:b", "ml:c").Val(), "the others released")
	assert.False(t, isClosed(m.Lost()), "a new channel for the next holding")
}
