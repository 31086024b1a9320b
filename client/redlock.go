package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/warden-go/warden/internal/quorum"
	"github.com/warden-go/warden/messages"
)

// RedLock is the Redis distlock algorithm over N independent Redis masters
// (not Redisson's deprecated RedissonRedLock): one owner takes the same
// lock on every master at once, each attempt bounded by a per-node timeout
// small against the lease, and holds the lock when a majority (N/2+1)
// granted it with validity left:
//
//	validity = lease − elapsed − drift, drift = lease × 0.01 + 2 ms
//
// Otherwise every master is unlocked and the attempt repeated after a
// random pause, within the wait. In watchdog mode every member is renewed
// by its client's watchdog, and the RedLock is lost (Lost closes) once a
// majority of the members are lost: renewal that keeps only a minority
// does not keep the RedLock. An acquire after that, without an Unlock,
// first does that Unlock (which releases the minority still held) and
// then takes the RedLock as a new holding.
//
// The members are the handles given to NewRedLock, one per master (from
// clients on independent Redis servers); the RedLock acts through handles
// of its own on the same clients and names, all with one owner of its own,
// so the lock has one owner on every master and two RedLocks over the same
// handles exclude each other.
type RedLock struct {
	locks  []*Lock
	quorum int
	err    error

	mu         sync.Mutex
	holds      int             // the RedLock's own hold count
	held       []bool          // the members the current holding holds
	validUntil time.Time       // of the current holding
	lostCh     chan struct{}   // the current (or next) holding's
	lost       bool            // lostCh is closed
	stop       chan struct{}   // ends the current loss watchers
	watchers   *sync.WaitGroup // the current holding's loss watchers
	expiry     clockwork.Timer // a fixed lease's validity end
	metered    *groupHold      // the current holding, as the metrics count it
}

// NewRedLock returns a RedLock over locks, one per independent Redis
// master. At least one member is needed, none may be nil or appear twice.
func NewRedLock(locks ...*Lock) *RedLock {
	r := &RedLock{err: validateMembers(locks)}
	if r.err != nil {
		return r
	}
	owner := locks[0].c.nextOwner()
	r.locks = make([]*Lock, len(locks))
	for i, l := range locks {
		r.locks[i] = l.c.newLock(l.name, l.kind, []LockOption{WithOwner(owner)})
	}
	r.quorum = quorum.Quorum(len(locks))
	r.held = make([]bool, len(locks))
	return r
}

// check validates the RedLock itself. A closed member client is not an
// error here: its master counts as failed, like an unreachable one.
func (r *RedLock) check() error {
	if r == nil {
		return invalid("lock", "nil handle")
	}
	if r.err == nil && len(r.locks) == 0 {
		return invalid("lock", "a zero RedLock: make one with NewRedLock")
	}
	return r.err
}

func (r *RedLock) clock() clockwork.Clock { return r.locks[0].c.opts.clock }

// tel is where the RedLock's own metrics and spans go: its first member's
// Client's.
func (r *RedLock) tel() *telemetry { return r.locks[0].c.tel }

// Owner returns the owner the RedLock holds its members with ("" for an
// invalid RedLock).
func (r *RedLock) Owner() string {
	if r.check() != nil {
		return ""
	}
	return r.locks[0].owner
}

// Lock acquires a majority in watchdog mode, retrying until it succeeds or
// ctx ends (then ErrNotObtained joined with the context's error).
func (r *RedLock) Lock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	_, err := r.acquire(ctx, time.Time{}, 0)
	return err
}

// LockLease acquires a majority with a fixed lease and no renewal,
// retrying until it succeeds or ctx ends.
func (r *RedLock) LockLease(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	if err := validateLease(lease, false); err != nil {
		return err
	}
	_, err := r.acquire(ctx, time.Time{}, lease)
	return err
}

// TryLock makes one attempt to acquire a majority in watchdog mode. It
// returns false, with a nil error, when no majority granted the lock; the
// masters that did are unlocked then.
func (r *RedLock) TryLock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return r.TryLockWait(ctx, 0, 0)
}

// TryLockWait retries for up to wait to acquire a majority, holding each
// member for lease (0: watchdog mode). It returns false with a nil error
// when the wait runs out. When so many masters fail (Redis errors, no
// reply within the per-node timeout, a closed client) that no majority is
// possible, every call returns at once with their errors.
func (r *RedLock) TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := r.check(); err != nil {
		return false, err
	}
	if err := validateWait(wait); err != nil {
		return false, err
	}
	if err := validateLease(lease, true); err != nil {
		return false, err
	}
	return r.acquire(ctx, r.clock().Now().Add(wait), lease)
}

// Unlock releases one hold on every master it can reach. It returns nil
// when a majority released; masters where the lock was not held or that
// could not be reached are not errors then. Otherwise it returns
// ErrNotHeld joined with the members' errors. The RedLock's own hold is
// given back when a majority of masters answered (released, or not
// held); when fewer did (unreachable masters, closed clients), the
// outcome is unknown: the holding stays, Lost keeps returning its channel,
// and Unlock may be called again. A holding that was reported lost (Lost
// closed) is never reported released: its Unlock releases every hold the
// holding has left on each master (those still held included, which are
// then no longer renewed), ends the holding once a majority answered, and
// returns an error that matches ErrLockLost and ErrNotHeld.
func (r *RedLock) Unlock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	r.mu.Lock()
	holds, lostBefore := r.holds, r.holds > 0 && r.lost
	r.mu.Unlock()
	times := 1
	if lostBefore {
		times = holds // none of them is held any more
	}
	errs := unlockTimes(ctx, r.locks, func(int) int { return times })
	r.mu.Lock()
	lost := r.holds > 0 && r.lost
	r.mu.Unlock()
	if lost {
		unlockLost(ctx, r.locks, errs, holds, lostBefore)
	}
	released, answered := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			released++
			answered++
		case errors.Is(err, ErrNotHeld):
			answered++
		}
	}
	var ended *sync.WaitGroup
	r.mu.Lock()
	lost = lost || r.holds > 0 && r.lost
	if r.holds > 0 && answered >= r.quorum {
		r.holds--
		if lost {
			r.holds = 0 // a lost holding's Unlock ends it
		}
		if r.holds == 0 {
			r.tel().groupEnded(r.metered, endReleased)
			r.metered = nil
			ended = r.watchers
			r.endHoldingLocked()
		}
	}
	r.mu.Unlock()
	if ended != nil {
		ended.Wait() // stopped: they return without r.mu
	}
	var failed []error
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("master %d: %w", i, bare(err)))
		}
	}
	var err error
	if released < r.quorum {
		err = fmt.Errorf("warden: redlock %s: released on %d of %d masters: %w: %w",
			r.locks[0].name, released, len(r.locks), bare(ErrNotHeld), messages.Join(failed...))
	}
	if lost && !errors.Is(err, ErrLockLost) {
		// Reported lost: never released, whatever the masters said.
		return &lostUnlockError{what: "redlock " + r.locks[0].name, cause: err}
	}
	return err
}

// ValidUntil is when the current holding's validity ends if it is not
// renewed: the acquire's start plus lease minus drift. In watchdog mode
// the members' renewals extend the lock itself; Lost tells when a majority
// is gone. Zero when the RedLock is not held.
func (r *RedLock) ValidUntil() time.Time {
	if r == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.validUntil
}

// Lost returns a channel closed when the current holding is lost: fewer
// than a majority of its members are still held (the others expired,
// vanished, could not be renewed, or their Client was closed: Close closes
// its handles' Lost channels at once). Each holding has its own channel;
// called before an acquire, Lost returns the next holding's. A nil handle
// returns a nil channel.
func (r *RedLock) Lost() <-chan struct{} {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lostCh == nil {
		r.lostCh = make(chan struct{})
	}
	return r.lostCh
}

// Do acquires a majority (watchdog mode), runs fn, and releases one hold
// on every master whatever fn does, as Lock.Do does: when fn panics, the
// RedLock is unlocked before the panic goes on. fn's context is cancelled
// when the holding is lost (see Lost), with a cause that matches
// ErrLockLost (and ErrClosed when a member's Client was closed); Do then
// returns that error, combined with fn's.
func (r *RedLock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return do(ctx, r, func() string { return "redlock " + r.locks[0].name }, r.memberClosed, fn)
}

// memberClosed reports whether a member's Client was closed.
func (r *RedLock) memberClosed() bool { return anyClosed(r.locks) }

// lease is the lease validity is counted from: the watchdog timeout in
// watchdog mode.
func (r *RedLock) lease(lease time.Duration) time.Duration {
	if lease > 0 {
		return lease
	}
	return r.locks[0].c.opts.watchdog
}

// errNodeTimeout marks a master that did not answer within the per-node
// timeout.
var errNodeTimeout = errors.New("warden: no reply within the per-node timeout")

// acquire takes a majority before deadline (zero: no limit but ctx's,
// with Lock's error contract; else TryLockWait's).
func (r *RedLock) acquire(ctx context.Context, deadline time.Time, lease time.Duration) (ok bool, err error) {
	ctx, measured := r.tel().begin(ctx, meterRedLock, r.locks[0].name)
	defer func() { measured.end(ctx, ok, err) }()
	clock := r.clock()
	if r.lostHolding() {
		giveBackLost(ctx, r.Unlock)
	}
	full := r.lease(lease)
	return retry(ctx, clock, deadline, "redlock "+r.locks[0].name, func() (bool, error) {
		start := clock.Now()
		ok, errs := r.attempt(ctx, lease, quorum.NodeTimeout(full))
		var held []*Lock
		var failed []error
		for i := range r.locks {
			if ok[i] {
				held = append(held, r.locks[i])
			}
			if errs[i] != nil {
				failed = append(failed, errs[i])
			}
		}
		validUntil := quorum.ValidUntil(start, full)
		if quorum.Holds(len(r.locks), len(held), clock.Now(), validUntil) {
			r.hold(ok, validUntil, lease > 0)
			return true, nil
		}
		releaseTaken(ctx, held)
		if ctx.Err() == nil && quorum.OutOfReach(len(r.locks), len(failed)) {
			return false, fmt.Errorf("warden: redlock %s: %d of %d masters failed, a majority is out of reach: %w",
				r.locks[0].name, len(failed), len(r.locks), messages.Join(failed...))
		}
		return false, nil
	})
}

// attempt tries every master at once, each bounded by timeout, and
// reports which granted the lock and each one's error.
func (r *RedLock) attempt(ctx context.Context, lease, timeout time.Duration) ([]bool, []error) {
	ok := make([]bool, len(r.locks))
	errs := make([]error, len(r.locks))
	var wg sync.WaitGroup
	for i, l := range r.locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ok[i], errs[i] = l.TryLockWait(nctx, 0, lease)
			switch {
			case errs[i] == nil:
			case ctx.Err() == nil && nctx.Err() != nil:
				errs[i] = fmt.Errorf("master %d: %w (%v)", i, bare(errNodeTimeout), timeout)
			default:
				errs[i] = fmt.Errorf("master %d: %w", i, bare(errs[i]))
			}
		}()
	}
	wg.Wait()
	return ok, errs
}

// lostHolding tells whether the current holding was reported lost.
func (r *RedLock) lostHolding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holds > 0 && r.lost
}

// hold records an acquire that took the members in taken, valid until
// validUntil. The members watched for loss are those the holding holds:
// the ones taken now and, on a reentry, the ones it held before and has
// not lost. A reentry after the holding was lost starts a new holding.
func (r *RedLock) hold(taken []bool, validUntil time.Time, fixed bool) {
	r.mu.Lock()
	var ended *sync.WaitGroup // the lost holding's watchers
	if r.holds > 0 && r.lost {
		ended = r.watchers
		r.endHoldingLocked()
		r.holds = 0
	}
	if r.holds == 0 {
		r.watchers = &sync.WaitGroup{} // the holding's own: Unlock waits for them when it ends
		r.metered = r.tel().groupStarted(meterRedLock, r.locks[0].name)
	}
	watchers := r.watchers
	r.holds++
	r.validUntil = validUntil
	for i, t := range taken {
		r.held[i] = r.held[i] || t
	}
	if r.lostCh == nil {
		r.lostCh = make(chan struct{})
	}
	r.stopWatchersLocked()
	stop := make(chan struct{})
	r.stop = stop
	if fixed {
		r.armExpiryLocked(validUntil, stop)
	}
	for i, l := range r.locks {
		if !r.held[i] {
			continue
		}
		memberLost := l.Lost()
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			select {
			case <-memberLost:
			case <-l.c.done: // a closed client renews nothing: its lock expires
			case <-stop:
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.stop != stop {
				return
			}
			r.held[i] = false
			if quorum.Lost(len(r.locks), countTrue(r.held), time.Time{}, time.Time{}) {
				r.loseLocked()
			}
		}()
	}
	r.mu.Unlock()
	if ended != nil {
		ended.Wait() // stopped: they return without r.mu
	}
}

// armExpiryLocked (re)arms the validity timer of the holding whose
// watchers stop with stop: the lock is valid until validUntil, and the
// holding is lost then, whatever the members' own leases say.
func (r *RedLock) armExpiryLocked(validUntil time.Time, stop chan struct{}) {
	if r.expiry != nil {
		r.expiry.Stop()
	}
	r.expiry = r.clock().AfterFunc(validUntil.Sub(r.clock().Now()), func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.stop == stop {
			r.loseLocked()
		}
	})
}

// loseLocked closes the holding's lost channel once, and stops its
// watchers: they have nothing left to tell.
func (r *RedLock) loseLocked() {
	if !r.lost {
		r.tel().groupLost(r.metered, r.memberClosed())
		r.metered = nil
		r.lost = true
		close(r.lostCh)
		r.stopWatchersLocked()
	}
}

// stopWatchersLocked ends the current loss watchers and the validity
// timer; the watchers return without taking r.mu.
func (r *RedLock) stopWatchersLocked() {
	if r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
	if r.expiry != nil {
		r.expiry.Stop()
		r.expiry = nil
	}
}

// endHoldingLocked forgets the holding that ended and readies the next
// holding's channel.
func (r *RedLock) endHoldingLocked() {
	r.stopWatchersLocked()
	clear(r.held)
	r.validUntil = time.Time{}
	r.lostCh, r.lost = nil, false // the next holding gets its own
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
