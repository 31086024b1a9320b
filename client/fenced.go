package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// FencedLock is a reentrant lock with fencing tokens (Redisson's
// RFencedLock). Every first acquire of a holding takes the next value of
// the counter redisson_lock_token:{name}, so tokens increase strictly per
// name across all clients; a reentry takes no new token and answers the
// counter's value, which is its holding's token while the counter
// survives (after a reset a reentry is refused as a first acquire is,
// with ErrFencingReset, giving back its own hold only). A resource the
// lock protects remembers the highest token it has accepted and refuses
// writes that carry a lower one: a holder that lost the lock without
// knowing (a pause longer than its lease) is then refused instead of
// overwriting its successor's work.
//
// Tokens increase strictly as long as the counter survives: a failover to
// a replica that missed the last increment, a restart that loses data, or
// an eviction (an allkeys-* maxmemory-policy; see docs/server.md) starts
// it again (WithReplicaSync narrows that window but does not close it). A Client never hands out a token lower than, or
// equal to, one it handed out before for the name: it keeps the highest
// per name, and so protects the 100,000 most recently acquired fenced
// names (a name acquired less recently than that is forgotten). An
// acquire that got such a token raises the counter back to the highest,
// is given back and fails with ErrFencingReset, and the next acquire from
// any Client takes a higher token; Token reports (and raises) a counter
// read lower than that the same way. A process that acquires after the
// reset, before a Client that handed out the higher tokens saw it, cannot
// tell, and takes them. An owner that holds the name through another kind
// of lock (a plain Lock with the same owner) and then enters the fenced
// lock is a reentry and takes no new token: use fenced handles only for a
// name.
//
// It has every method of Lock, and so satisfies Mutex; the plain Lock
// methods acquire without answering the token (Token reads it).
type FencedLock struct {
	l *Lock // of kind KindFencedLock; nil in a nil handle
}

// FencedLock returns a handle on the fenced lock name, with a fresh owner
// unless WithOwner says otherwise.
func (c *Client) FencedLock(name string, opts ...LockOption) *FencedLock {
	return &FencedLock{c.newLock(name, messages.KindFencedLock, opts)}
}

// lock is the handle's Lock, nil for a nil handle: every Lock method
// rejects a nil *Lock as a nil handle.
func (f *FencedLock) lock() *Lock {
	if f == nil {
		return nil
	}
	return f.l
}

// Name returns the lock's name, its Redis key ("" for a nil handle).
func (f *FencedLock) Name() string { return f.lock().Name() }

// Owner returns the handle's owner identity ("" for a nil handle).
func (f *FencedLock) Owner() string { return f.lock().Owner() }

// Lock acquires the lock in watchdog mode, waiting until it is free or ctx
// ends (then the error matches ErrNotObtained and the context's error).
// LockToken also answers the holding's token.
func (f *FencedLock) Lock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return f.lock().Lock(ctx)
}

// LockLease acquires the lock with a fixed lease and no renewal, waiting
// until it is free or ctx ends, as Lock.LockLease does.
func (f *FencedLock) LockLease(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return f.lock().LockLease(ctx, lease)
}

// TryLock makes one attempt to acquire the lock in watchdog mode.
func (f *FencedLock) TryLock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return f.lock().TryLock(ctx)
}

// TryLockWait waits up to wait for the lock and holds it for lease (0:
// watchdog mode). It returns false, with a nil error, when wait runs out.
// TryLockToken also answers the holding's token.
func (f *FencedLock) TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return f.lock().TryLockWait(ctx, wait, lease)
}

// Unlock releases one hold; ErrNotHeld when the handle's owner does not
// hold the lock. The token counter is kept: the next holding's token is
// higher.
func (f *FencedLock) Unlock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return f.lock().Unlock(ctx)
}

// ForceUnlock deletes the lock whoever holds it, and wakes its waiters. It
// reports whether the lock existed. The token counter is kept.
func (f *FencedLock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return f.lock().ForceUnlock(ctx)
}

// IsLocked reports whether anyone holds the lock.
func (f *FencedLock) IsLocked(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return f.lock().IsLocked(ctx)
}

// IsHeld reports whether the handle's owner holds the lock.
func (f *FencedLock) IsHeld(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return f.lock().IsHeld(ctx)
}

// HoldCount returns how many times the handle's owner holds the lock, 0
// when it does not.
func (f *FencedLock) HoldCount(ctx context.Context) (int, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	return f.lock().HoldCount(ctx)
}

// RemainTTL returns the lock's remaining lease: ErrNotLocked when the lock
// does not exist, -1 when it exists without a TTL.
func (f *FencedLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	return f.lock().RemainTTL(ctx)
}

// Lost returns a channel closed when the handle's current holding is lost,
// as Lock.Lost does (a nil handle returns a nil channel).
func (f *FencedLock) Lost() <-chan struct{} { return f.lock().Lost() }

// Do acquires the lock (watchdog mode), runs fn, and releases one hold
// whatever fn does, as Lock.Do does: fn's context is cancelled on loss
// (cause ErrLockLost; ErrClosed too when the Client closed). Token, called
// in fn, reads the holding's token.
func (f *FencedLock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return f.lock().Do(ctx, fn)
}

// Extend sets the lease of the handle owner's fixed-lease holding anew, as
// Lock.Extend does; the holding keeps its token.
func (f *FencedLock) Extend(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return f.lock().Extend(ctx, lease)
}

// Locker adapts the handle to sync.Locker, as Lock.Locker does.
func (f *FencedLock) Locker() sync.Locker { return f.lock().Locker() }

// LockToken acquires the lock in watchdog mode, waiting until it is free or
// ctx ends, and returns the holding's token.
func (f *FencedLock) LockToken(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if f == nil {
		return 0, invalid("lock", "nil handle")
	}
	r, err := f.l.acquire(ctx, 0, time.Time{}, true, 0)
	if err != nil {
		return 0, err
	}
	return r.Token, nil
}

// TryLockToken waits up to wait for the lock, holds it for lease (0:
// watchdog mode) and returns the holding's token. It returns false, with a
// nil error, when wait runs out.
func (f *FencedLock) TryLockToken(ctx context.Context, wait, lease time.Duration) (int64, bool, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, false, err
	}
	if f == nil {
		return 0, false, invalid("lock", "nil handle")
	}
	r, err := f.l.tryAcquire(ctx, wait, lease)
	if r == nil {
		return 0, false, err
	}
	return r.Token, true, nil
}

// Token returns the token of the handle owner's current holding, read from
// Redis; ErrNotHeld when the owner does not hold the lock.
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if f == nil {
		return 0, invalid("lock", "nil handle")
	}
	if err := f.l.check(); err != nil {
		return 0, err
	}
	token, held, err := redisio.FencedToken(ctx, f.l.c.rdb, f.l.name, f.l.owner)
	if err != nil {
		return 0, err
	}
	if !held {
		return 0, fmt.Errorf("%w: fenced lock %s, owner %s", ErrNotHeld, f.l.name, f.l.owner)
	}
	if highest, lower := f.l.c.fences.below(f.l.name, token); lower {
		back := &backwardsError{name: f.l.name, read: token, highest: highest}
		_, back.raised = redisio.RaiseToken(ctx, f.l.c.rdb, f.l.name, highest)
		return 0, back
	}
	return token, nil
}
