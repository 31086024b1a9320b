package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/multi"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// MultiLock holds several locks as one (Redisson's RedissonMultiLock): all
// of its members or none. Members may come from any clients on any Redis
// deployments. A MultiLock is reentrant through its members: each member
// handle keeps its own owner, so acquiring the MultiLock again reenters
// every member, and a member already held through its own handle is
// simply reentered.
//
// Members are taken one at a time in one canonical order (by name, then by
// the Redis server's address), whatever order they were given in, so
// MultiLocks sharing members always take them in the same order and never
// hold one each of two members the other wants. The first member waits as
// long as the budget allows; a later one at most 1.5 s, after which the
// members taken are released and the whole set is tried again after a
// short random pause (under 50 ms), within the same wait budget. An
// attempt during which a member it took was lost is given back and tried
// again too. A member whose earlier holding by the same owner ran out
// while the attempt's reentry of it was in flight (as when a holding of
// the set was lost and the set is taken again without an Unlock) is asked
// again at once, and so taken afresh. A reentry of a holding of
// the set that was not lost fails instead, with ErrLockLost, when that
// holding is lost meanwhile, as a Lock's reentry does.
//
// A holding of the MultiLock (from the acquire that takes the set to the
// Unlock that gives back its last hold) is lost, and Lost closed, as soon
// as one member's holding is lost: the set is no longer held as one. That
// includes a member whose Client is closed (Client.Close closes its
// handles' Lost channels). An acquire after a loss, without an Unlock,
// first does that Unlock (which releases what the lost holding left on
// the other members) and then takes the set as a new holding.
//
// The simulation (package sim) takes its MultiLocks with the same
// decisions (the order, each member's wait, whether an attempt holds the
// set, the pause), through the engine's messages.
type MultiLock struct {
	locks []*Lock
	names string // the members' names, joined with ", ", in order
	err   error

	mu       sync.Mutex
	holds    int             // the MultiLock's own hold count
	lostCh   chan struct{}   // the current (or next) holding's
	lost     bool            // lostCh is closed
	stop     chan struct{}   // ends the current holding's loss watchers
	watchers *sync.WaitGroup // the current holding's loss watchers
	metered  *groupHold      // the current holding, as the metrics count it
}

// NewMultiLock returns a MultiLock over locks. At least one member is
// needed, none may be nil, and none may appear twice; otherwise every call
// returns ErrInvalidArgument.
func NewMultiLock(locks ...*Lock) *MultiLock {
	if err := validateMembers(locks); err != nil {
		return &MultiLock{err: err}
	}
	ordered := multi.Sorted(locks, func(l *Lock) multi.Member {
		return multi.Member{Name: l.name, Server: serverOf(l)}
	})
	return newMultiLock(ordered)
}

// newMultiLock returns a MultiLock over locks, valid and distinct, taken
// in the order given.
func newMultiLock(locks []*Lock) *MultiLock {
	names := make([]string, len(locks))
	for i, l := range locks {
		names[i] = l.name
	}
	return &MultiLock{locks: locks, names: strings.Join(names, ", ")}
}

// newMultiLockInOrder returns a MultiLock over locks, valid and distinct,
// that takes them in the order given: a canonical order of the caller's
// own (a StripedLock's ascending stripe index).
func newMultiLockInOrder(locks []*Lock) *MultiLock {
	if err := validateMembers(locks); err != nil {
		return &MultiLock{err: err}
	}
	return newMultiLock(locks)
}

// serverOf names the Redis server a lock's client talks to, for the
// canonical member order: its address, or "" when the client has no
// stable one (Sentinel, Ring, a wrapper), which keeps the given order
// among members of one name.
func serverOf(l *Lock) string {
	switch r := l.c.rdb.(type) {
	case *redis.Client:
		if addr := r.Options().Addr; addr != "FailoverClient" {
			return addr
		}
	case *redis.ClusterClient:
		return strings.Join(r.Options().Addrs, ",")
	}
	return ""
}

// validateMembers checks a MultiLock's or RedLock's members.
func validateMembers(locks []*Lock) error {
	if len(locks) == 0 {
		return invalid("locks", "no members")
	}
	type member struct {
		server string
		name   string
	}
	seen := make(map[member]int, len(locks))
	for i, l := range locks {
		if l == nil || l.c == nil {
			return invalid("locks", "member %d is a nil handle", i)
		}
		if l.err != nil {
			return fmt.Errorf("warden: %w", messages.Within("locks: member "+strconv.Itoa(i), l.err))
		}
		// Two members on one lock would exclude each other (different
		// owners) or count twice (the same owner).
		m := member{server: serverOf(l), name: l.name}
		if m.server == "" {
			m.server = l.c.id // no stable address: at least one client
		}
		if j, dup := seen[m]; dup {
			if l.kind == messages.KindGroupLock {
				return invalid("locks", "members %d and %d are group locks of one group %s: put their values in one GroupLock", j, i, l.name)
			}
			return invalid("locks", "members %d and %d are the same lock %s on one server", j, i, l.name)
		}
		seen[m] = i
	}
	return nil
}

func (m *MultiLock) check() error {
	if m == nil {
		return invalid("lock", "nil handle")
	}
	if m.err == nil && len(m.locks) == 0 {
		return invalid("lock", "a zero MultiLock: make one with NewMultiLock")
	}
	return m.err
}

// Lock acquires every member in watchdog mode, waiting until all are
// obtained or ctx ends (then ErrNotObtained joined with the context's
// error).
func (m *MultiLock) Lock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return err
	}
	_, err := m.acquire(ctx, time.Time{}, 0)
	return err
}

// LockLease acquires every member with a fixed lease and no renewal. The
// set is held for at most lease from the moment its first member was
// taken: a set whose first member's lease ran out while later ones were
// awaited is given back and tried again.
func (m *MultiLock) LockLease(ctx context.Context, lease time.Duration) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return err
	}
	if err := validateLease(lease, false); err != nil {
		return err
	}
	_, err := m.acquire(ctx, time.Time{}, lease)
	return err
}

// TryLock makes one attempt to acquire every member in watchdog mode. It
// returns false, with a nil error, when a member is held by another owner;
// the members it took are given back then.
func (m *MultiLock) TryLock(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	return m.TryLockWait(ctx, 0, 0)
}

// TryLockWait waits up to wait, in all, for every member and holds each for
// lease (0: watchdog mode). It returns false, with a nil error, when the
// wait runs out.
func (m *MultiLock) TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := m.check(); err != nil {
		return false, err
	}
	if err := validateWait(wait); err != nil {
		return false, err
	}
	if err := validateLease(lease, true); err != nil {
		return false, err
	}
	return m.acquire(ctx, m.clock().Now().Add(wait), lease)
}

// Unlock releases one hold of every member. Every member is tried; the
// errors of those that failed (ErrNotHeld for a member not held) are
// returned together, in one error that matches each of them. A holding
// that was reported lost (Lost closed) is never reported released: its
// Unlock releases every hold the holding has left on each member (the
// members that were not lost included, which are then no longer held nor
// renewed by it), ends the holding, and returns an error that matches
// ErrLockLost and ErrNotHeld. Otherwise the MultiLock's own hold is given
// back when every member was released or was not held; while a member's
// release has an
// unknown outcome (a Redis error, ctx's end, a closed Client), the holding
// and its Lost channel stay, and Unlock may be called again.
func (m *MultiLock) Unlock(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return err
	}
	var errs []error
	holds, lostBefore := m.holdState()
	times := 1
	if lostBefore {
		times = holds // none of them is held any more
	}
	results := unlockTimes(ctx, m.locks, func(int) int { return times })
	lost := lostBefore || m.reportedLost()
	if lost {
		unlockLost(ctx, m.locks, results, holds, lostBefore)
	}
	ended := true
	for i, err := range results {
		if err != nil {
			errs = append(errs, messages.Within("member "+m.locks[i].name, err))
			ended = ended && errors.Is(err, ErrNotHeld)
		}
	}
	if ended {
		m.release(lost)
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("warden: %s: unlock: %w", m.describe(), messages.Join(errs...))
	}
	if lost && !errors.Is(err, ErrLockLost) {
		// Reported lost: never released, whatever the members said.
		return &lostUnlockError{what: m.describe(), cause: err}
	}
	return err
}

// holdState is the MultiLock's own hold count and whether the current
// holding was reported lost.
func (m *MultiLock) holdState() (holds int, lost bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds, m.holds > 0 && m.lost
}

// reportedLost tells whether the current holding was reported lost (its
// Lost channel closed).
func (m *MultiLock) reportedLost() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds > 0 && m.lost
}

// Lost returns a channel closed when the current holding is lost: a
// member's holding was lost (it expired, was force-unlocked, vanished, or
// the member's Client was closed). Each holding has its own channel;
// called before an acquire, Lost returns the next holding's. A nil handle
// returns a nil channel.
func (m *MultiLock) Lost() <-chan struct{} {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostCh == nil {
		m.lostCh = make(chan struct{})
	}
	return m.lostCh
}

// Do acquires every member (watchdog mode), runs fn, and releases one hold
// of each whatever fn does, as Lock.Do does: when fn panics, the members
// are released before the panic goes on. fn's context is cancelled when a
// member's holding is lost, with a cause that matches ErrLockLost (and
// ErrClosed when a member's Client was closed); Do then returns that
// error, combined with fn's.
func (m *MultiLock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	return do(ctx, m, m.describe, m.memberClosed, fn)
}

// describe names the MultiLock in errors.
func (m *MultiLock) describe() string {
	return "multilock " + m.names
}

// memberClosed reports whether a member's Client was closed.
func (m *MultiLock) memberClosed() bool { return anyClosed(m.locks) }

// anyClosed reports whether the Client of one of locks was closed.
func anyClosed(locks []*Lock) bool {
	for _, l := range locks {
		if l.c.closed.Load() {
			return true
		}
	}
	return false
}

// hold records an acquire that took the set. The first hold of a holding
// (or a reentry after its loss, which starts a new holding) watches every
// member's holding for loss.
func (m *MultiLock) hold() {
	m.mu.Lock()
	var ended *sync.WaitGroup // the lost holding's watchers
	if m.holds > 0 && m.lost {
		ended = m.watchers
		m.endHoldingLocked()
		m.holds = 0
	}
	m.holds++
	if m.holds == 1 {
		m.metered = m.tel().groupStarted(meterMultiLock, m.meterName())
		if m.lostCh == nil {
			m.lostCh = make(chan struct{})
		}
		stop, watchers := make(chan struct{}), &sync.WaitGroup{}
		m.stop, m.watchers = stop, watchers
		for _, l := range m.locks {
			memberLost := l.Lost()
			watchers.Go(func() {
				select {
				case <-memberLost:
				case <-stop:
					return
				}
				m.mu.Lock()
				defer m.mu.Unlock()
				if m.stop == stop { // the holding's first loss
					m.loseLocked()
				}
			})
		}
	}
	m.mu.Unlock()
	if ended != nil {
		ended.Wait() // stopped: they return without m.mu
	}
}

// loseLocked reports the current holding lost: its Lost closes, and its
// watchers stop, having nothing left to tell. It is a no-op once the
// holding was reported lost, or when there is none.
func (m *MultiLock) loseLocked() {
	if m.stop == nil {
		return
	}
	m.tel().groupLost(m.metered, m.memberClosed())
	m.metered = nil
	m.lost = true
	close(m.lostCh)
	close(m.stop)
	m.stop = nil
}

// release gives back one of the MultiLock's holds (all: every one, as
// the Unlock of a lost holding does); the last one ends the holding and
// its watchers.
func (m *MultiLock) release(all bool) {
	var ended *sync.WaitGroup
	m.mu.Lock()
	if m.holds > 0 {
		m.holds--
		if all {
			m.holds = 0
		}
		if m.holds == 0 {
			m.tel().groupEnded(m.metered, endReleased)
			m.metered = nil
			ended = m.watchers
			m.endHoldingLocked()
		}
	}
	m.mu.Unlock()
	if ended != nil {
		ended.Wait() // stopped: they return without m.mu
	}
}

// endHoldingLocked stops the holding's watchers and readies the next
// holding's channel.
func (m *MultiLock) endHoldingLocked() {
	if m.stop != nil {
		close(m.stop)
	}
	m.stop, m.watchers = nil, nil
	m.lostCh, m.lost = nil, false
}

func (m *MultiLock) clock() clockwork.Clock { return m.locks[0].c.opts.clock }

// tel is where the MultiLock's own metrics and spans go: its first
// member's Client's.
func (m *MultiLock) tel() *telemetry { return m.locks[0].c.tel }

// meterName is the MultiLock's name in metrics, when they carry names.
func (m *MultiLock) meterName() string {
	if !m.tel().withName && !m.tel().tracing {
		return ""
	}
	return m.names
}

// acquire takes every member, or none, before deadline (zero: no limit but
// ctx's, with Lock's error contract; else TryLockWait's). It is measured
// and traced as one call; the members' acquires are the span's children.
func (m *MultiLock) acquire(ctx context.Context, deadline time.Time, lease time.Duration) (ok bool, err error) {
	ctx, measured := m.tel().begin(ctx, meterMultiLock, m.meterName())
	returned := false // a member's call on this goroutine may panic
	defer func() { measured.endReturned(ctx, ok, err, returned) }()
	clock := m.clock()
	if _, lost := m.holdState(); lost {
		giveBackLost(ctx, m.Unlock)
	}
	holds, lost := m.holdState()
	plan := multi.Plan{N: len(m.locks), Deadline: deadline, Lease: lease, Reentry: holds > 0 && !lost}
	defer func() {
		if plan.Reentry && errors.Is(err, ErrLockLost) {
			// The member's holding the reentry found lost is the set's:
			// Lost is closed when the reentry's error returns, not when
			// the member's watcher runs.
			m.mu.Lock()
			m.loseLocked()
			m.mu.Unlock()
		}
	}()
	ok, err = retry(ctx, clock, deadline, m.describe(), func() (bool, error) {
		a, err := m.attempt(ctx, plan)
		if err != nil {
			return false, err
		}
		held, giveBack := plan.Outcome(a, clock.Now())
		if !held {
			releaseTaken(ctx, m.locks[:giveBack])
		} else {
			m.hold()
		}
		return held, nil
	})
	returned = true
	return ok, err
}

// attempt takes the members in order, each with the deadline plan gives
// it, and reports how many it took and whether one of them was lost
// meanwhile; it stops at the first member not obtained in time. A Redis
// error ends the attempt with the members taken given back.
func (m *MultiLock) attempt(ctx context.Context, plan multi.Plan) (multi.Attempt, error) {
	clock := m.clock()
	a := multi.Attempt{Start: clock.Now()}
	defer func() {
		if p := recover(); p != nil {
			// A member's acquire panicked on this goroutine (a hook of the
			// caller's Redis client; the engine settles that member's
			// call itself): the members taken before it are given back,
			// as on an error, and the panic goes on to the caller.
			releaseTaken(ctx, m.locks[:a.Taken])
			panic(p)
		}
	}()
	for i, l := range m.locks {
		dl, wait := plan.Member(i, clock.Now())
		var reentered chan struct{} // the lost channel of the member's holding a reentry adds to
		if plan.Reentry {
			_, reentered = l.boundHolding()
		}
		r, err := l.acquire(ctx, plan.Lease, dl, false, wait)
		if plan.MemberLost(err) {
			// An earlier holding of it ran out meanwhile; that is
			// settled now, and asking again takes it afresh.
			if i == 0 {
				a.Start = clock.Now() // the set's lease runs from its first member's take
			}
			r, err = l.acquire(ctx, plan.Lease, dl, false, wait)
		}
		if err != nil && ctx.Err() != nil {
			err = nil // the caller reports the context's end
		}
		if plan.MemberLost(err) {
			a.Lost = true // lost again: the whole set is tried again
			return a, nil
		}
		if err != nil {
			releaseTaken(ctx, m.locks[:i])
			return multi.Attempt{}, fmt.Errorf("warden: %w", messages.Within("multilock member "+l.name, err))
		}
		if r == nil {
			return a, nil
		}
		a.Taken++
		if reentered != nil && isClosed(reentered) {
			// Redis took the member afresh: the holding the set reentered
			// was gone from it, and the set's holding with it.
			releaseTaken(ctx, m.locks[:i+1])
			return multi.Attempt{}, fmt.Errorf("%w: multilock member %s: its holding was gone before the set's reentry",
				ErrLockLost, l.name)
		}
	}
	for _, l := range m.locks {
		select {
		case <-l.Lost(): // told lost since the attempt took it
			a.Lost = true
		default:
		}
	}
	return a, nil
}

// giveBackLost runs unlock, the Unlock of a MultiLock or RedLock whose
// holding was reported lost, before an acquire takes the set again: what
// the lost holding left on its members (a member that outlived the loss)
// is released, so that the new holding's Unlock frees every member. Its
// error tells the loss, which Lost told already.
func giveBackLost(ctx context.Context, unlock func(context.Context) error) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
	defer cancel()
	_ = unlock(uctx)
}

// releaseTaken gives back one hold of each of locks, which were just
// taken; a failure is left to the lock's lease.
func releaseTaken(ctx context.Context, locks []*Lock) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
	defer cancel()
	unlockAll(uctx, locks)
}

// unlockAll releases one hold of every lock at once and returns each
// lock's error, in order.
func unlockAll(ctx context.Context, locks []*Lock) []error {
	return unlockTimes(ctx, locks, func(int) int { return 1 })
}

// unlockTimes releases times(i) holds of each lock i, the locks at once
// and each one's holds one after the other, and returns each lock's
// error, in order: the first that one of its releases met, which ends its
// releases.
func unlockTimes(ctx context.Context, locks []*Lock, times func(i int) int) []error {
	errs := make([]error, len(locks))
	done := make(chan struct{}, len(locks))
	for i, l := range locks {
		n := times(i)
		go func() {
			for range n {
				if errs[i] = l.Unlock(ctx); errs[i] != nil {
					break
				}
			}
			done <- struct{}{}
		}()
	}
	for range locks {
		<-done
	}
	return errs
}

// unlockLost releases what a holding of holds holds of the members is
// left with once it was reported lost: errs are the members' errors of an
// Unlock that released one hold of each (lostBefore false: the loss was
// reported meanwhile) or all of them (lostBefore true). The surviving
// members' other holds are released now, so that none of them stays held
// (and renewed) by a holding that is over. It updates errs.
func unlockLost(ctx context.Context, locks []*Lock, errs []error, holds int, lostBefore bool) {
	if lostBefore || holds <= 1 {
		return
	}
	more := unlockTimes(ctx, locks, func(i int) int {
		if errs[i] != nil {
			return 0 // lost, or already failed
		}
		return holds - 1
	})
	for i, err := range more {
		if err != nil {
			errs[i] = err
		}
	}
}

// retry calls try until it takes the set (true) or fails (an error),
// pausing a random moment between calls (multi.Again, multi.Pause). A
// zero deadline is the blocking calls' (Lock, LockLease): they try until
// ctx ends. Otherwise it is a Try call's: when deadline passes retry
// returns false with a nil error. Either fails, when ctx ends, with
// ErrNotObtained joined with ctx's error, naming what (waitCtxErr).
func retry(ctx context.Context, clock clockwork.Clock, deadline time.Time, what string, try func() (bool, error)) (bool, error) {
	blocking := deadline.IsZero()
	for {
		if ok, err := try(); ok || err != nil {
			return ok, err
		}
		if ctx.Err() != nil {
			return false, waitCtxErr(ctx, what, blocking)
		}
		if !multi.Again(deadline, clock.Now()) {
			return false, nil
		}
		if err := pause(ctx, clock, deadline); err != nil {
			return false, waitCtxErr(ctx, what, blocking)
		}
	}
}

// pause sleeps on clock for multi.Pause, drawn from the global random
// source; it returns ctx's error if ctx ends first.
func pause(ctx context.Context, clock clockwork.Clock, deadline time.Time) error {
	t := clock.NewTimer(multi.Pause(deadline, clock.Now(), rand.Uint64()))
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
