package client

import (
	"context"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// FencedLock is a reentrant lock with fencing tokens (Redisson's
// RFencedLock). Every first acquire of a holding takes the next value of
// the counter redisson_lock_token:{name}, so tokens increase strictly per
// name across all clients; a reentry answers its holding's token. A
// resource the lock protects remembers the highest token it has accepted
// and refuses writes that carry a lower one: a holder that lost the lock
// without knowing (a pause longer than its lease) is then refused instead
// of overwriting its successor's work.
//
// Tokens increase strictly as long as the counter survives: a failover to
// a replica that missed the last increment, or a restart that loses data,
// can hand a token out again (WithReplicaSync narrows that window but does
// not close it). An owner that holds the name through another kind of lock
// (a plain Lock with the same owner) and then enters the fenced lock is a
// reentry and takes no new token: use fenced handles only for a name.
//
// It has every method of Lock; the plain Lock methods acquire without
// answering the token (Token reads it).
type FencedLock struct {
	*Lock
}

// FencedLock returns a handle on the fenced lock name, with a fresh owner
// unless WithOwner says otherwise.
func (c *Client) FencedLock(name string, opts ...LockOption) *FencedLock {
	return &FencedLock{c.newLock(name, messages.KindFencedLock, opts)}
}

// LockToken acquires the lock in watchdog mode, waiting until it is free or
// ctx ends, and returns the holding's token.
func (f *FencedLock) LockToken(ctx context.Context) (int64, error) {
	if f == nil {
		return 0, invalid("lock", "nil handle")
	}
	r, err := f.acquire(ctx, 0, time.Time{}, true, 0)
	if err != nil {
		return 0, err
	}
	return r.Token, nil
}

// TryLockToken waits up to wait for the lock, holds it for lease (0:
// watchdog mode) and returns the holding's token. It returns false, with a
// nil error, when wait runs out.
func (f *FencedLock) TryLockToken(ctx context.Context, wait, lease time.Duration) (int64, bool, error) {
	if f == nil {
		return 0, false, invalid("lock", "nil handle")
	}
	r, err := f.tryAcquire(ctx, wait, lease)
	if r == nil {
		return 0, false, err
	}
	return r.Token, true, nil
}

// Token returns the token of the handle owner's current holding, read from
// Redis; ErrNotHeld when the owner does not hold the lock.
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	if f == nil {
		return 0, invalid("lock", "nil handle")
	}
	if err := f.check(); err != nil {
		return 0, err
	}
	token, held, err := redisio.FencedToken(ctx, f.c.rdb, f.name, f.owner)
	if err != nil {
		return 0, err
	}
	if !held {
		return 0, ErrNotHeld
	}
	return token, nil
}
