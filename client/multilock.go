package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

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
// long as the budget allows; a later one at most memberWait, after which
// the members taken are released and the whole set is tried again after a
// short random pause, within the same wait budget.
type MultiLock struct {
	locks []*Lock
	err   error
}

// memberWait bounds how long a MultiLock holding some members waits for
// the next one before it gives them all back and starts again.
const memberWait = 1500 * time.Millisecond

// retryPause bounds the random pause before a MultiLock or RedLock tries
// its members again.
const retryPause = 50 * time.Millisecond

// NewMultiLock returns a MultiLock over locks. At least one member is
// needed, none may be nil, and none may appear twice; otherwise every call
// returns ErrInvalidArgument.
func NewMultiLock(locks ...*Lock) *MultiLock {
	if err := validateMembers(locks); err != nil {
		return &MultiLock{err: err}
	}
	ordered := slices.Clone(locks)
	server := make(map[*Lock]string, len(locks))
	for _, l := range locks {
		server[l] = serverOf(l)
	}
	slices.SortStableFunc(ordered, func(a, b *Lock) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(server[a], server[b]))
	})
	return &MultiLock{locks: ordered}
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
			return fmt.Errorf("member %d: %w", i, l.err)
		}
		// Two members on one lock would exclude each other (different
		// owners) or count twice (the same owner).
		m := member{server: serverOf(l), name: l.name}
		if m.server == "" {
			m.server = l.c.id // no stable address: at least one client
		}
		if j, dup := seen[m]; dup {
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
	return m.err
}

// Lock acquires every member in watchdog mode, waiting until all are
// obtained or ctx ends (then ErrNotObtained joined with the context's
// error).
func (m *MultiLock) Lock(ctx context.Context) error {
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
	if err := errors.Join(m.check(), validateLease(lease, false)); err != nil {
		return err
	}
	_, err := m.acquire(ctx, time.Time{}, lease)
	return err
}

// TryLockWait waits up to wait, in all, for every member and holds each for
// lease (0: watchdog mode). It returns false, with a nil error, when the
// wait runs out.
func (m *MultiLock) TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if err := errors.Join(m.check(), validateWait(wait), validateLease(lease, true)); err != nil {
		return false, err
	}
	return m.acquire(ctx, m.clock().Now().Add(wait), lease)
}

// Unlock releases one hold of every member. Every member is tried; the
// errors of those that failed (ErrNotHeld for a member not held) are
// returned joined.
func (m *MultiLock) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	var errs []error
	for _, err := range unlockAll(ctx, m.locks) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *MultiLock) clock() clockwork.Clock { return m.locks[0].c.opts.clock }

// acquire takes every member, or none, before deadline (zero: no limit but
// ctx's, with Lock's error contract; else TryLockWait's).
func (m *MultiLock) acquire(ctx context.Context, deadline time.Time, lease time.Duration) (bool, error) {
	clock := m.clock()
	return retry(ctx, clock, deadline, func() (bool, error) {
		start := clock.Now()
		taken, err := m.attempt(ctx, deadline, lease)
		if err != nil {
			return false, err
		}
		if taken == len(m.locks) && (lease == 0 || clock.Since(start) < lease) {
			return true, nil
		}
		// Not all taken, or the first member's lease ran out meanwhile.
		releaseTaken(ctx, m.locks[:taken])
		return false, nil
	})
}

// attempt takes the members in order and returns how many it took; it
// stops at the first member not obtained in time. A Redis error ends the
// attempt with the members taken given back.
func (m *MultiLock) attempt(ctx context.Context, deadline time.Time, lease time.Duration) (int, error) {
	clock := m.clock()
	for i, l := range m.locks {
		// The first member waits for the whole budget (with none, as long
		// as ctx allows); a later one at most memberWait.
		var dl time.Time
		switch {
		case deadline.IsZero() && i == 0:
		case deadline.IsZero():
			dl = clock.Now().Add(memberWait)
		case i == 0:
			dl = deadline
		default:
			dl = earliest(deadline, clock.Now().Add(memberWait))
		}
		var wait time.Duration // a fair member's place in the queue lasts its wait
		if !dl.IsZero() {
			wait = max(0, dl.Sub(clock.Now()))
		}
		a, err := l.acquire(ctx, lease, dl, false, wait)
		ok := a != nil
		if err != nil && ctx.Err() != nil {
			err = nil // the caller reports the context's end
		}
		if err != nil {
			releaseTaken(ctx, m.locks[:i])
			return 0, fmt.Errorf("warden: multilock member %s: %w", l.name, err)
		}
		if !ok {
			return i, nil
		}
	}
	return len(m.locks), nil
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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
	errs := make([]error, len(locks))
	done := make(chan struct{}, len(locks))
	for i, l := range locks {
		go func() {
			errs[i] = l.Unlock(ctx)
			done <- struct{}{}
		}()
	}
	for range locks {
		<-done
	}
	return errs
}

// retry calls try until it takes the set (true) or fails (an error),
// pausing a random moment between calls. A zero deadline is the blocking
// calls' (Lock, LockLease): they try until ctx ends, then fail with
// ErrNotObtained joined with ctx's error. Otherwise it is a Try call's:
// when deadline passes retry returns false with a nil error, and when ctx
// ends, ctx's error.
func retry(ctx context.Context, clock clockwork.Clock, deadline time.Time, try func() (bool, error)) (bool, error) {
	blocking := deadline.IsZero()
	for {
		if ok, err := try(); ok || err != nil {
			return ok, err
		}
		if ctx.Err() != nil {
			return false, waitCtxErr(ctx, blocking)
		}
		if !blocking && !clock.Now().Before(deadline) {
			return false, nil
		}
		if err := pause(ctx, clock, deadline); err != nil {
			return false, waitCtxErr(ctx, blocking)
		}
	}
}

// pause sleeps a random time up to retryPause on clock, never past
// deadline (zero: none); it returns ctx's error if ctx ends first.
func pause(ctx context.Context, clock clockwork.Clock, deadline time.Time) error {
	d := time.Duration(rand.Int64N(int64(retryPause))) + time.Millisecond
	if !deadline.IsZero() {
		d = min(d, max(0, deadline.Sub(clock.Now())))
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
