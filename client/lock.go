package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// Lock is a handle on a reentrant distributed lock (Redisson's RLock). Its
// owner is fixed when the handle is made; reentry is the same owner
// acquiring again, from any goroutine. A handle is safe for concurrent use,
// but goroutines that share one handle share its owner and so do not
// exclude each other through its methods: give each contender its own
// handle (handles are cheap), as Redisson gives each thread its own owner,
// or share the handle's Locker, which excludes them as a sync.Mutex does.
//
// The same type is the handle of the other lock kinds: FairLock, the two
// sides of a ReadWriteLock, and NonReentrantLock and NonReentrantFairLock,
// whose holder cannot enter again (ErrAlreadyHeld).
type Lock struct {
	c     *Client
	name  string
	kind  messages.Kind
	owner string
	err   error // a validation error, returned by every call
	// backOff spaces a spin lock waiter's polls (zero: the default).
	backOff messages.BackOff
	// values are a group lock's values, sorted (GroupLock).
	values []string

	// local is the Locker's exclusion of the goroutines that share the
	// handle: a slot taken from Locker().Lock to Locker().Unlock, made on
	// the first use (slot).
	local chan struct{}

	mu      sync.Mutex
	lostCh  chan struct{}
	bound   bool   // lostCh belongs to holding
	holding uint64 // the current holding, when bound
	// handedOut marks a lostCh that Lost returned: it is the caller's too.
	handedOut bool
	// spareCh is the channel of a holding that ended unlost, which nobody
	// but the handle ever saw: the next holding's channel (bindHolding).
	spareCh chan struct{}
}

// Lock returns a handle on the reentrant lock name, with a fresh owner
// unless WithOwner says otherwise. An invalid name is reported by every
// call on the handle.
func (c *Client) Lock(name string, opts ...LockOption) *Lock {
	return c.newLock(name, messages.KindLock, opts)
}

// FairLock returns a handle on the fair lock name (Redisson's RFairLock):
// waiters across all processes acquire in the order they asked, Redisson
// clients' threads in the same queue included. A waiter keeps its place in
// the queue for as long as it waits, whoever takes the lock ahead of it:
// its engine refreshes the place, as it renews a held lock's lease. The
// place of a waiter whose process died is given up within its place time
// (the watchdog timeout, WithFairPlaceTime, or a shorter wait of
// TryLockWait's), and the waiters behind it move up. Every deadline in the
// queue is Redisson's (docs/fairlock.md tells how the two kinds of waiter
// share it). TryLock never takes a place. Unlock keeps the contract of
// every kind: ErrNotHeld when the owner does not hold the lock, though the
// unlock of a free lock still wakes the queue's head, as Redisson's does.
func (c *Client) FairLock(name string, opts ...LockOption) *Lock {
	return c.newLock(name, messages.KindFairLock, opts)
}

// NonReentrantLock returns a handle on the non-reentrant lock name
// (Redisson's RedissonNonReentrantLock): as Lock, but the owner that holds
// it cannot take it again. Such an acquire (Lock, LockLease, TryLock,
// TryLockWait, Do) fails at once with ErrAlreadyHeld: it does not wait,
// adds no hold and leaves the holding's lease as it is, so the owner's
// count in Redis is always 1 and one Unlock frees the lock. Goroutines
// that share a handle share its owner: give each its own handle, or share
// the handle's Locker. The lock keeps the reentrant lock's keys and
// channel, so a Redisson client's NonReentrantLock (or Lock) of the same
// name excludes it.
func (c *Client) NonReentrantLock(name string, opts ...LockOption) *Lock {
	return c.newLock(name, messages.KindNonReentrantLock, opts)
}

// NonReentrantFairLock returns a handle on the non-reentrant fair lock
// name (Redisson's RedissonNonReentrantFairLock): a FairLock (waiters
// acquire in the order they asked, across processes) that the owner
// holding it cannot take again: such an acquire fails at once with
// ErrAlreadyHeld, without waiting, without a place in the queue and
// without adding a hold. It keeps the fair lock's keys and channels, and
// its queue and Unlock behave as FairLock's.
func (c *Client) NonReentrantFairLock(name string, opts ...LockOption) *Lock {
	return c.newLock(name, messages.KindNonReentrantFairLock, opts)
}

func (c *Client) newLock(name string, kind messages.Kind, opts []LockOption) *Lock {
	var o lockOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	l := &Lock{c: c, name: name, kind: kind, owner: o.owner}
	if c == nil {
		return l // every call on it returns ErrInvalidArgument (check)
	}
	if !o.ownerSet {
		l.owner = c.nextOwner()
	}
	l.err = validateLockHandle(c, kind, name, l.owner)
	if l.err == nil && o.backOffSet {
		l.err, l.backOff = validateBackOff(kind, o), o.backOff
	}
	return l
}

// Name returns the lock's name, its Redis key ("" for a nil handle).
func (l *Lock) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Owner returns the handle's owner identity ("" for a nil handle).
func (l *Lock) Owner() string {
	if l == nil {
		return ""
	}
	return l.owner
}

func (l *Lock) check() error {
	if l == nil || l.c == nil {
		return invalid("lock", "nil handle")
	}
	if l.err != nil {
		return l.err
	}
	return l.c.errClosed()
}

// Lock acquires the lock in watchdog mode, waiting until it is free or ctx
// ends (then the error is ErrNotObtained joined with the context's error).
func (l *Lock) Lock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	_, err := l.acquire(ctx, 0, time.Time{}, true, 0)
	return err
}

// LockLease acquires the lock with a fixed lease and no renewal, waiting
// until it is free or ctx ends. A lease under MinLease is refused with
// ErrInvalidArgument. A lease that runs out before the acquire's
// answer comes (shorter than the round trip) fails with ErrLockLost and
// leaves nothing held.
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := validateLease(lease, false); err != nil {
		return err
	}
	_, err := l.acquire(ctx, lease, time.Time{}, true, 0)
	return err
}

// TryLock makes one attempt to acquire the lock in watchdog mode.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return l.TryLockWait(ctx, 0, 0)
}

// TryLockWait waits up to wait for the lock and holds it for lease (0:
// watchdog mode; otherwise at least MinLease). It returns false, with a
// nil error, when wait runs out, and ErrLockLost when a lease shorter than
// the round trip ran out before the answer came (nothing is held then).
func (l *Lock) TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	r, err := l.tryAcquire(ctx, wait, lease)
	return r != nil, err
}

// tryAcquire validates and runs a Try acquire with wait and lease: the
// Acquired reply, or nil when wait ran out.
func (l *Lock) tryAcquire(ctx context.Context, wait, lease time.Duration) (*messages.Acquired, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := messages.Join(l.check(), validateWait(wait), validateLease(lease, true)); err != nil {
		return nil, err
	}
	return l.acquire(ctx, lease, l.c.opts.clock.Now().Add(wait), false, wait)
}

// acquire runs one Acquire through the engine and returns its Acquired
// reply, nil when a try's wait ran out. blocking tells Lock (no deadline
// of its own) from TryLock (see Client.wait); when ctx ends, both fail
// with ErrNotObtained joined with ctx's error. wait is a fair lock
// waiter's allowance in the queue (0: the default).
func (l *Lock) acquire(ctx context.Context, lease time.Duration, deadline time.Time, blocking bool, wait time.Duration) (*messages.Acquired, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	req := &messages.Acquire{Name: l.name, Kind: l.kind, Owner: l.owner, RequestID: l.c.nextRequestID(),
		Lease: wholeMillis(lease), Deadline: deadline, Watch: true}
	if l.kind.Fair() {
		req.Wait = wait
	}
	if l.kind == messages.KindSpinLock {
		req.BackOff = l.backOff
	}
	req.Values = l.values
	r, err := l.c.wait(ctx, req, blocking, func(*messages.Acquired) {
		// Give this hold back. Nobody waits for the answer; the mailbox
		// still sees it and forgets the holding if this was its last hold.
		l.c.send(&messages.Release{Name: l.name, Kind: l.kind, Owner: l.owner, RequestID: l.c.nextRequestID(), Values: l.values})
	})
	var back *backwardsError
	if errors.As(err, &back) {
		return nil, l.giveBackBackwards(ctx, back)
	}
	if r == nil {
		return nil, err
	}
	l.bindHolding(r.Holding)
	return r, nil
}

// giveBackBackwards raises the counter of a fenced lock whose acquire took
// a token its Client refused (see fences) back to the highest handed out,
// so that the next acquire from any Client takes a higher one, then
// releases the hold the acquire took, before the acquire returns back.
func (l *Lock) giveBackBackwards(ctx context.Context, back *backwardsError) error {
	l.bindHolding(back.acquired.Holding)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
	defer cancel()
	_, back.raised = redisio.RaiseToken(uctx, l.c.rdb, l.name, back.highest)
	remaining, holding, err := l.c.release(uctx, l.name, l.kind, l.owner, l.values...)
	if (err == nil && remaining == 0) || errors.Is(err, ErrNotHeld) {
		l.endHolding(holding)
	}
	if err != nil && !errors.Is(err, ErrNotHeld) {
		back.released = err
	}
	return back
}

// Unlock releases one hold. It returns ErrNotHeld when the handle's owner
// does not hold the lock (never held, already released, expired, or
// force-unlocked), for every kind of lock, fair ones included. When the
// last hold is released, the lock is deleted and its waiters woken.
//
// A holding that was reported lost (its Lost channel closed) is never
// reported released: its Unlock deletes what Redis may still have of it
// (a lease ends in Redis up to a few milliseconds after the engine counts
// it lost), all its holds at once, and returns an error that matches both
// ErrLockLost and ErrNotHeld. Should the owner hold the lock again by then
// (another goroutine sharing the handle, or a handle of WithOwner's), the
// holds Redis kept belong to that newer holding, and the Unlock leaves
// them to it.
//
// An Unlock that fails otherwise (a Redis error, or ctx ending before the
// answer) leaves the holding, not known released: Lost keeps returning its
// channel. After a failed unlock of the last hold the lock is no longer
// renewed, so it expires within its lease, and the holding's channel is
// closed then; a Lock before that reenters the holding if Redis still has
// it.
func (l *Lock) Unlock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	bound, lostCh := l.boundHolding()
	lostBefore := lostCh != nil && isClosed(lostCh)
	var lost uint64
	if lostBefore {
		lost = bound
	}
	remaining, holding, err := l.c.releaseLost(ctx, l.name, l.kind, l.owner, lost, l.values...)
	if lostCh != nil && isClosed(lostCh) && !l.c.closed.Load() && (err == nil || lostBefore) {
		// Reported lost before its answer came (the loss and the answer
		// come in order). A release of a holding reported lost before it
		// was sent gave back all that Redis had left of it, holds beyond
		// the first included, unless a newer holding of the owner's has
		// them by now (the engine decides, in order with that holding's
		// requests). One that left holds it was not sent for gives them
		// back the same way; should one of them fail, what is left expires
		// within a second. A release that itself found the holding gone
		// (it closed Lost on its way) answers ErrNotHeld as it is.
		if !lostBefore && err == nil && remaining > 0 {
			_, _, err = l.c.releaseLost(ctx, l.name, l.kind, l.owner, bound, l.values...)
		}
		if errors.Is(err, ErrNotHeld) {
			err = nil
		}
		l.endHolding(bound)
		return &lostUnlockError{what: fmt.Sprintf("%s %s, owner %s", l.kind, l.name, l.owner), cause: err}
	}
	if (err == nil && remaining == 0) || errors.Is(err, ErrNotHeld) {
		l.endHolding(holding)
	}
	return err
}

// lostUnlockError is the error of an Unlock of a holding that was reported
// lost: it matches ErrLockLost and ErrNotHeld, and wraps what the release
// answered otherwise, if anything (an error clearing what was left).
type lostUnlockError struct {
	what  string
	cause error
}

func (e *lostUnlockError) Error() string {
	msg := ErrLockLost.Error() + ": " + e.what + ": the holding was reported lost before its unlock, so it is not held"
	if e.cause != nil {
		msg += " (" + bare(e.cause).Error() + ")"
	}
	return msg
}

// Is matches ErrLockLost and ErrNotHeld.
func (e *lostUnlockError) Is(target error) bool { return target == ErrLockLost || target == ErrNotHeld }

// Unwrap is what the release answered otherwise, if anything.
func (e *lostUnlockError) Unwrap() error { return e.cause }

// boundHolding is the holding the handle is bound to and its lost channel
// (nil when not bound).
func (l *Lock) boundHolding() (uint64, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.bound {
		return 0, nil
	}
	return l.holding, l.lostCh
}

// bindHolding ties the handle's lost channel to the holding the engine
// reported.
func (l *Lock) bindHolding(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bound && l.holding == id {
		return
	}
	if l.lostCh == nil || l.bound {
		if l.spareCh != nil {
			l.lostCh, l.spareCh = l.spareCh, nil
		} else {
			l.lostCh = make(chan struct{})
		}
		l.handedOut = false
	}
	l.bound, l.holding = true, id
	l.c.watchLost(holdingKey{l.name, l.kind, l.owner, id}, l.lostCh)
}

// endHolding detaches the handle from holding id, which ended (the mailbox
// forgets the holding itself), unless the handle has moved on to a newer
// holding meanwhile.
func (l *Lock) endHolding(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bound && l.holding == id {
		// The mailbox forgot the holding before its Unlock returned, so no
		// loss of it closes the channel from now on: one nobody else saw
		// serves the next holding.
		if !l.handedOut && !isClosed(l.lostCh) {
			l.spareCh = l.lostCh
		}
		l.lostCh, l.bound, l.handedOut = nil, false, false
	}
}

// isClosed tells whether ch is closed; nothing is ever sent on it.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Lost returns a channel that is closed when the handle's current holding
// is lost: the lock expired, was force-unlocked, or vanished in a Redis
// restart while held. Each holding (from the first acquire to the unlock
// that frees it) has its own channel; called before an acquire, Lost
// returns the channel of the next holding. A holding lasts until an
// Unlock is known to have released it: after a failed Unlock, Lost still
// returns its channel. A nil handle, which never holds, returns a nil
// channel.
//
// Client.Close closes the channel of every holding at once, since nothing
// renews it afterwards; a handle that was holding keeps returning its
// closed channel after Close.
func (l *Lock) Lost() <-chan struct{} {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostCh == nil {
		l.lostCh = make(chan struct{})
	}
	l.handedOut = true
	return l.lostCh
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters (a
// spin lock's find it free at their next poll). It reports whether the
// lock existed. A read or write lock's ForceUnlock
// deletes it only while it is held in its own mode. A watchdog-mode holder learns of the
// loss at its next renewal; a fixed-lease holder when its lease would have
// ended, or at its Unlock (ErrNotHeld).
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := l.check(); err != nil {
		return false, err
	}
	switch l.kind {
	case messages.KindFairLock, messages.KindNonReentrantFairLock:
		return l.c.scripts.FairForceUnlock(ctx, l.c.rdb, l.name, l.c.opts.clock.Now())
	case messages.KindReadLock:
		return l.c.scripts.ReadForceUnlock(ctx, l.c.rdb, l.name)
	case messages.KindWriteLock:
		return l.c.scripts.WriteForceUnlock(ctx, l.c.rdb, l.name)
	case messages.KindSpinLock:
		return l.c.scripts.SpinForceUnlock(ctx, l.c.rdb, l.name)
	case messages.KindGroupLock:
		return l.c.scripts.GroupForceUnlock(ctx, l.c.rdb, l.name, l.values)
	}
	return l.c.scripts.ForceUnlock(ctx, l.c.rdb, l.name)
}

// IsLocked reports whether anyone holds the lock. For a read lock: whether
// it is held for reading (also by the write holder); for a write lock:
// whether it is held for writing.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := l.check(); err != nil {
		return false, err
	}
	switch l.kind {
	case messages.KindReadLock:
		return redisio.ReadIsLocked(ctx, l.c.rdb, l.name)
	case messages.KindWriteLock:
		return redisio.WriteIsLocked(ctx, l.c.rdb, l.name)
	case messages.KindGroupLock:
		return redisio.GroupIsLocked(ctx, l.c.rdb, l.name, l.values)
	}
	return redisio.IsLocked(ctx, l.c.rdb, l.name)
}

// IsHeld reports whether the handle's owner holds the lock.
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	n, err := l.HoldCount(ctx)
	return n > 0, err
}

// HoldCount returns how many times the handle's owner holds the lock, 0
// when it does not.
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := l.check(); err != nil {
		return 0, err
	}
	switch l.kind {
	case messages.KindReadLock:
		return redisio.ReadHoldCount(ctx, l.c.rdb, l.name, l.owner)
	case messages.KindWriteLock:
		return redisio.WriteHoldCount(ctx, l.c.rdb, l.name, l.owner)
	case messages.KindGroupLock:
		return redisio.GroupHoldCount(ctx, l.c.rdb, l.name, l.owner, l.values)
	}
	return redisio.HoldCount(ctx, l.c.rdb, l.name, l.owner)
}

// RemainTTL returns the lock's remaining lease. It returns ErrNotLocked
// when the lock does not exist, and -1 when it exists without a TTL.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := l.check(); err != nil {
		return 0, err
	}
	ttl, exists, err := redisio.RemainTTL(ctx, l.c.rdb, l.name)
	if err != nil {
		return 0, err
	}
	if !exists {
		return 0, fmt.Errorf("%w: %s", ErrNotLocked, l.name)
	}
	return ttl, nil
}

// Do acquires the lock (watchdog mode), runs fn, and releases one hold,
// whatever fn does: when fn panics, Do unlocks (and stops watching the
// holding) before the panic goes on. The release runs on a context
// detached from ctx, bounded by redisio.IOTimeout, so an ended ctx does
// not leave the lock held.
//
// fn's context is cancelled when the holding is lost while fn runs, with a
// cause that matches ErrLockLost; when the loss is the Client's Close
// (see Client.Close), the cause matches ErrClosed too. Do then returns
// that error, combined with fn's. Otherwise Do returns fn's error as it
// is, or the unlock's error combined with it.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return do(ctx, l, func() string { return fmt.Sprintf("%s %s", l.kind, l.name) },
		func() bool { return l.c.closed.Load() }, fn)
}
