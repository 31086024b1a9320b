package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/warden-go/warden/internal/quorum"
	"github.com/warden-go/warden/messages"
)

// Extend sets the lease of the handle owner's current holding anew: the
// lock then lives lease from now (from when Redis runs the call), longer
// or shorter than what was left, as redsync's Extend and redislock's
// Refresh do. Lost follows the new lease: its channel is closed when the
// extended lease runs out without an Unlock, not at the old lease's end. A
// later Unlock of one of several holds refreshes the lock to lease too.
//
// Only a fixed-lease holding has a lease to extend (LockLease, or
// TryLockWait with a lease). A holding in watchdog mode (Lock, TryLock,
// Do) is renewed by the watchdog for as long as it is held, so Extend
// refuses it with ErrInvalidArgument naming the lease, and changes
// nothing: extending it would either be undone by the next renewal or
// silently stop the renewals the caller asked for.
//
// Extend returns ErrNotHeld when the owner does not hold the lock (never
// held, released, or found gone: then the holding is lost and Lost's
// channel is closed), ErrLockLost when the old lease ran out while the
// call was on its way, and ErrInvalidArgument, before any Redis call, for
// a lease under MinLease (a lease between whole milliseconds is rounded up). On
// a Redis error the lease is the old or the new one: the engine then
// counts the earlier end.
//
// On a read lock the owner's holding has one lease per read hold (as in
// Redisson, each hold has its own timeout key): Extend sets each of the
// owner's read holds to lease and leaves other readers' holds alone; a
// holding with any read hold in watchdog mode is in watchdog mode. On a
// write lock the lock lives at least as long as the owner's own read
// holds.
func (l *Lock) Extend(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(l.check(), validateLease(lease, false)); err != nil {
		return err
	}
	req := &messages.Extend{Name: l.name, Kind: l.kind, Owner: l.owner, RequestID: l.c.nextRequestID(),
		Lease: wholeMillis(lease)}
	reply, err := l.c.ask(ctx, req.RequestID, req, func() string { return fmt.Sprintf("extend %s %s", l.kind, l.name) })
	if err != nil {
		return err
	}
	switch r := reply.(type) {
	case *messages.Extended:
		return nil
	case *messages.ExtendFailed:
		return r.Err
	}
	return fmt.Errorf("warden: extend %s %s: unexpected reply %T", l.kind, l.name, reply)
}

// Extend sets the lease of every member's fixed-lease holding anew, as
// Lock.Extend does, all at once. It returns nil when every member was
// extended; otherwise the errors of those that were not, together in one
// error that matches each of them (ErrNotHeld for a member not held,
// ErrInvalidArgument for one in watchdog mode). The members that were
// extended keep their new lease. A lease under MinLease is refused with
// ErrInvalidArgument before any Redis call.
func (m *MultiLock) Extend(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(m.check(), validateLease(lease, false)); err != nil {
		return err
	}
	var errs []error
	for i, err := range extendAll(ctx, m.locks, lease, 0) {
		if err != nil {
			errs = append(errs, messages.Within("member "+m.locks[i].name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("warden: %s: extend: %w", m.describe(), messages.Join(errs...))
	}
	return nil
}

// Extend sets the lease of the RedLock's fixed-lease holding anew on every
// master it holds, at once, each bounded by the per-node timeout, and
// succeeds as an acquire does: when a majority extended it with validity
// left (lease − elapsed − drift > 0). The holding is then valid until the
// new validity's end (ValidUntil), and Lost follows it. Otherwise it
// returns ErrNotHeld joined with the masters' errors and the holding
// keeps its old validity (the masters that were extended keep their new
// lease). A RedLock held in watchdog mode is refused with
// ErrInvalidArgument, as Lock.Extend refuses it; so is a lease under MinLease,
// before any Redis call.
func (r *RedLock) Extend(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := messages.Join(r.check(), validateLease(lease, false)); err != nil {
		return err
	}
	lease = wholeMillis(lease)
	r.mu.Lock()
	holds, stop, fixed := r.holds, r.stop, r.expiry != nil
	var held []*Lock
	for i, h := range r.held {
		if h {
			held = append(held, r.locks[i])
		}
	}
	r.mu.Unlock()
	switch {
	case holds == 0:
		return fmt.Errorf("warden: redlock %s: extend: %w", r.locks[0].name, bare(ErrNotHeld))
	case stop == nil:
		return fmt.Errorf("warden: redlock %s: extend: %w: the holding was lost", r.locks[0].name, bare(ErrNotHeld))
	case !fixed:
		return invalid("lease", "redlock %s is held in watchdog mode: the watchdog renews its members' leases, "+
			"which have no end to extend", r.locks[0].name)
	}
	clock := r.clock()
	start := clock.Now()
	errs := extendAll(ctx, held, lease, quorum.NodeTimeout(lease))
	extended := 0
	var failed []error
	for i, err := range errs {
		if err == nil {
			extended++
		} else {
			failed = append(failed, fmt.Errorf("master %s: %w", held[i].name, bare(err)))
		}
	}
	validUntil := quorum.ValidUntil(start, lease)
	if quorum.Holds(len(r.locks), extended, clock.Now(), validUntil) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.stop != stop {
			return fmt.Errorf("warden: redlock %s: extend: %w: the holding was lost meanwhile", r.locks[0].name, bare(ErrLockLost))
		}
		r.validUntil = validUntil
		r.armExpiryLocked(validUntil, stop)
		return nil
	}
	return fmt.Errorf("warden: redlock %s: extended on %d of %d masters: %w: %w",
		r.locks[0].name, extended, len(r.locks), bare(ErrNotHeld), messages.Join(failed...))
}

// extendAll extends every lock at once, each bounded by timeout when it is
// not zero, and returns each lock's error, in order.
func extendAll(ctx context.Context, locks []*Lock, lease, timeout time.Duration) []error {
	errs := make([]error, len(locks))
	var wg sync.WaitGroup
	for i, l := range locks {
		wg.Go(func() {
			c := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				c, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			errs[i] = l.Extend(c, lease)
		})
	}
	wg.Wait()
	return errs
}
