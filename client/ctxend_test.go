package client_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

// waitCall is one call that waits: it returns the call's error.
type waitCall struct {
	what string
	call func(ctx context.Context) error
}

// errOf adapts a Try call's results to its error.
func errOf[T any](_ T, err error) error { return err }

// errOf3 adapts a Try call's three results to its error.
func errOf3[T, U any](_ T, _ U, err error) error { return err }

// waitCalls lists every call that waits, blocking or Try, of every
// primitive, each on something held elsewhere (by holder, another Client)
// or not there yet, so that it waits until its context ends.
func waitCalls(t *testing.T, c, holder *client.Client, others ...*client.Client) []waitCall {
	ctx := testCtx(t)
	hold := func(l interface {
		Lock(context.Context) error
		ForceUnlock(context.Context) (bool, error)
	}) {
		require.NoError(t, l.Lock(ctx))
		t.Cleanup(func() { _, _ = l.ForceUnlock(context.Background()) })
	}
	var calls []waitCall
	lockCalls := func(kind string, l client.Mutex) {
		calls = append(calls,
			waitCall{kind + " Lock", l.Lock},
			waitCall{kind + " LockLease", func(ctx context.Context) error { return l.LockLease(ctx, time.Minute) }},
			waitCall{kind + " TryLock", func(ctx context.Context) error { return errOf(l.TryLock(ctx)) }},
			waitCall{kind + " TryLockWait", func(ctx context.Context) error { return errOf(l.TryLockWait(ctx, time.Minute, 0)) }},
			waitCall{kind + " Do", func(ctx context.Context) error { return l.Do(ctx, func(context.Context) error { return nil }) }},
		)
	}
	kinds := []struct {
		kind       string
		mine, held *client.Lock
	}{
		{"lock", c.Lock("ce-lock"), holder.Lock("ce-lock")},
		{"fair lock", c.FairLock("ce-fair"), holder.FairLock("ce-fair")},
		{"non-reentrant lock", c.NonReentrantLock("ce-nr"), holder.NonReentrantLock("ce-nr")},
		{"non-reentrant fair lock", c.NonReentrantFairLock("ce-nrf"), holder.NonReentrantFairLock("ce-nrf")},
		{"spin lock", c.SpinLock("ce-spin"), holder.SpinLock("ce-spin")},
		{"read lock", c.ReadWriteLock("ce-rw").ReadLock(), holder.ReadWriteLock("ce-rw").WriteLock()},
		{"write lock", c.ReadWriteLock("ce-rw2").WriteLock(), holder.ReadWriteLock("ce-rw2").ReadLock()},
		{"group lock", c.GroupLock("ce-group", "v"), holder.GroupLock("ce-group", "v")},
		{"striped lock", c.StripedLock("ce-striped", 4).For("k"), holder.StripedLock("ce-striped", 4).For("k")},
	}
	for _, k := range kinds {
		hold(k.held)
		lockCalls(k.kind, k.mine)
	}

	hold(holder.FencedLock("ce-fenced"))
	f := c.FencedLock("ce-fenced")
	lockCalls("fenced lock", f)
	calls = append(calls,
		waitCall{"fenced lock LockToken", func(ctx context.Context) error { return errOf(f.LockToken(ctx)) }},
		waitCall{"fenced lock TryLockToken", func(ctx context.Context) error { return errOf3(f.TryLockToken(ctx, time.Minute, 0)) }})

	// One client per server; a handle of another owner on each holds the
	// name there.
	servers := append([]*client.Client{c}, others...)
	members := func(name string) []*client.Lock {
		locks := make([]*client.Lock, len(servers))
		for i, s := range servers {
			hold(s.Lock(name))
			locks[i] = s.Lock(name)
		}
		return locks
	}
	lockCalls("multilock", client.NewMultiLock(members("ce-multi")...))
	lockCalls("redlock", client.NewRedLock(members("ce-red")...))

	s := c.Semaphore("ce-sem") // no permits
	p := c.PermitExpirableSemaphore("ce-permits")
	d := c.CountDownLatch("ce-latch")
	set(t, d.TrySetCount, 1)
	t.Cleanup(func() { _ = d.CountDown(context.Background()) })
	calls = append(calls,
		waitCall{"semaphore Acquire", func(ctx context.Context) error { return s.Acquire(ctx, 1) }},
		waitCall{"semaphore TryAcquire", func(ctx context.Context) error { return errOf(s.TryAcquire(ctx, 2, time.Minute)) }},
		waitCall{"permit-expirable semaphore Acquire", func(ctx context.Context) error { return errOf(p.Acquire(ctx, 0)) }},
		waitCall{"permit-expirable semaphore TryAcquire", func(ctx context.Context) error { return errOf3(p.TryAcquire(ctx, time.Minute, 0)) }},
		waitCall{"permit-expirable semaphore AcquirePermits", func(ctx context.Context) error { return errOf(p.AcquirePermits(ctx, 2, 0)) }},
		waitCall{"permit-expirable semaphore TryAcquirePermits", func(ctx context.Context) error {
			return errOf3(p.TryAcquirePermits(ctx, 2, time.Minute, 0))
		}},
		waitCall{"count-down latch Await", d.Await},
		waitCall{"count-down latch TryAwait", func(ctx context.Context) error { return errOf(d.TryAwait(ctx, time.Minute)) }},
	)
	return calls
}

// notObtainedText is the one shape of every such error: what was waited
// for, "not obtained", the context's error, and its cause, if any.
var notObtainedText = regexp.MustCompile(`^warden: [^;]+ not obtained( \(it did not reach zero\))?: context (canceled|deadline exceeded)( \(cause: [^()]+\))?$`)

// One rule for every call that waits, blocking or Try, of every type: when
// its context ends (before or during the wait), its error matches both
// ErrNotObtained and the context's error (and cause), in one line of one
// shape that names what was waited for; nothing is left held.
func TestEveryWaitEndedByItsContextIsNotObtained(t *testing.T) {
	envs, clients := nodes(t, 3)
	c, holder := clients[0], envs[0].newClient(t) // holder: another process on c's server
	calls := waitCalls(t, c, holder, clients[1:]...)
	why := errors.New("shutting down")
	ends := []struct {
		how     string
		ctx     func(t *testing.T) (context.Context, context.CancelFunc)
		targets []error
	}{
		{"cancelled before the call", func(t *testing.T) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(testCtx(t))
			cancel()
			return ctx, cancel
		}, []error{context.Canceled}},
		{"deadline during the wait", func(t *testing.T) (context.Context, context.CancelFunc) {
			return context.WithTimeout(testCtx(t), 100*time.Millisecond)
		}, []error{context.DeadlineExceeded}},
		{"cancelled with a cause during the wait", func(t *testing.T) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(testCtx(t))
			timer := time.AfterFunc(100*time.Millisecond, func() { cancel(why) })
			return ctx, func() { timer.Stop(); cancel(nil) }
		}, []error{context.Canceled, why}},
	}
	for _, end := range ends {
		t.Run(end.how, func(t *testing.T) {
			for _, wc := range calls {
				if strings.HasSuffix(wc.what, " TryLock") && end.how != "cancelled before the call" {
					continue // it does not wait: only an ended context can end it
				}
				ctx, cancel := end.ctx(t)
				err := wc.call(ctx)
				cancel()
				if !assert.Error(t, err, wc.what) {
					continue
				}
				assert.ErrorIs(t, err, client.ErrNotObtained, "%s: %v", wc.what, err)
				for _, target := range end.targets {
					assert.ErrorIs(t, err, target, "%s: %v", wc.what, err)
				}
				assert.Regexp(t, notObtainedText, err.Error(), wc.what)
				assert.Equal(t, 1, strings.Count(err.Error(), "warden:"), "%s: one prefix: %v", wc.what, err)
			}
		})
	}
}
