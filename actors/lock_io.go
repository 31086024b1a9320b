package actors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// The Redis calls of each lock kind a key actor serves: which script runs
// an acquire, unlock, undo or hold count, which channel a waiter listens
// on, and which field the renewer keeps alive.

// fairAllowance is a fair lock waiter's default allowance (Redisson's
// threadWaitTime), what its deadline in the queue is counted by, as
// Redisson counts it. The engine's own places are also refreshed ones,
// kept alive for their place time (Config.placeTime).
const fairAllowance = 5 * time.Minute

// lockIO runs the Redis calls of one lock name and kind.
type lockIO struct {
	cfg  *Config
	name string
	kind messages.Kind
	// args are the name's script arguments for the kinds on the reentrant
	// lock's scripts (usesLockArgs): the key actor's (keyActor.args).
	args *redisio.LockArgs
	// values, for a group lock, are the values of the owner a call is
	// for: set on the copy each call runs on.
	values []string
}

// usesLockArgs tells the kinds whose acquire and unlock are the reentrant
// lock's scripts, which take lockIO.args.
func usesLockArgs(k messages.Kind) bool {
	switch k {
	case messages.KindLock, messages.KindFencedLock, messages.KindSpinLock, messages.KindNonReentrantLock:
		return true
	}
	return false
}

// lockArgs are args, made for the call when the key actor has none (a
// kind usesLockArgs does not name).
func (l lockIO) lockArgs() *redisio.LockArgs {
	if l.args != nil {
		return l.args
	}
	return l.cfg.Scripts.LockArgs(l.name)
}

// channel is the channel a waiter of owner is woken on: one per owner for
// the fair lock, one per name otherwise.
func (l lockIO) channel(owner string) string {
	switch l.kind {
	case messages.KindFairLock, messages.KindNonReentrantFairLock:
		return redisio.FairChannel(l.name, owner)
	case messages.KindReadLock, messages.KindWriteLock:
		return redisio.RWChannel(l.name)
	default:
		return redisio.LockChannel(l.name)
	}
}

// perWaiter tells that every waiter keeps its own place in Redis (the fair
// lock's queue): each attempts on arrival and listens on its own channel,
// instead of only the local queue's head waiting on Redis.
func (l lockIO) perWaiter() bool {
	return l.kind.Fair()
}

// nonReentrant tells that the owner that holds the lock cannot enter it
// again: its acquire is refused (ErrAlreadyHeld) and leaves the holding's
// count and lease as they are.
func (l lockIO) nonReentrant() bool {
	return l.kind.NonReentrant()
}

// polls tells that the lock's waiters poll with back-off instead of
// listening on a channel (the spin lock): a refused waiter subscribes to
// nothing and retries after its back-off's pause, and the lock's scripts
// publish nothing.
func (l lockIO) polls() bool { return l.kind == messages.KindSpinLock }

// eachAttempts tells that every waiter attempts on its own, not only the
// local queue's head: a fair waiter keeps its own place, and a group
// lock's waiter asks for its own values, which may be free while the
// head's are not. Every such waiter is woken by a message on its channel.
func (l lockIO) eachAttempts() bool { return l.perWaiter() || l.kind == messages.KindGroupLock }

// shared tells that holders do not exclude each other (read locks): an
// acquire lets the next local waiter try at once.
func (l lockIO) shared() bool { return l.kind == messages.KindReadLock }

// sharesHash tells that the lock's hash is shared by both sides of a
// read/write lock, each hold with its own lease: a holding's end need not
// be the hash's.
func (l lockIO) sharesHash() bool {
	return l.kind == messages.KindReadLock || l.kind == messages.KindWriteLock
}

// wakesAll tells whether a message on the channel wakes every local waiter
// rather than the head (a write unlock on a read/write lock).
func (l lockIO) wakesAll(payload string) bool {
	return (l.kind == messages.KindReadLock || l.kind == messages.KindWriteLock) && payload == redisio.RWReadUnlockMessage
}

// ttlGrain is the grain of Redis's clock: it sets a lease's expiry from
// its time in whole milliseconds (and a read unlock copies a surviving
// hold's PTTL, in whole milliseconds), so a lease can run out up to this
// much before the moment its request was sent plus the lease. The engine
// counts a lease as ending that much early, so that its owner is told no
// later than Redis lets the lock go.
const ttlGrain = time.Millisecond

// leaseEnd is when a holding's explicit lease ends after an acquire with
// lease that started at started, given when it ended before (zero: never
// held, or watchdog mode); zero in watchdog mode. A write lock's reentry
// adds its lease to the time left, as Redis does; a read lock lives as
// long as its longest read hold. Each new lease counts from ttlGrain early.
func (l lockIO) leaseEnd(before time.Time, lease time.Duration, started time.Time) time.Time {
	switch end := started.Add(lease - ttlGrain); {
	case lease == 0:
		return time.Time{}
	case l.kind == messages.KindWriteLock && !before.IsZero():
		return before.Add(lease - ttlGrain)
	case l.kind == messages.KindReadLock && before.After(end):
		return before
	default:
		return end
	}
}

// endInFlight is the earliest a holding's explicit lease, counted to end,
// may run out once Redis runs a request of its owner's that started at
// started, when the request's answer has not come: an acquire (a reentry
// with lease, or the watchdog) sets the reentrant, fair or fenced lock's
// TTL to its lease, and an unlock of one of several holds sets it back to
// the holding's lease, from when Redis runs it; a read unlock drops the
// owner's newest read hold (reads lists its read holds, oldest first),
// and the hash lives as long as the longest survivor, renewed while one
// of them is in watchdog mode. A write reentry adds to the time left and
// a read acquire never shortens it. A zero end (watchdog mode) stays zero
// but for the reentry of the reentrant, fair or fenced lock, which the
// caller asks about only when it has an explicit lease, and for the read
// unlock that leaves only explicit-lease holds.
func (l lockIO) endInFlight(end time.Time, release bool, lease time.Duration, started time.Time, reads []readHold) time.Time {
	switch {
	case l.kind == messages.KindReadLock && release:
		if len(reads) < 2 {
			return end
		}
		left := holding{reads: reads[:len(reads)-1]}
		left.settleReads()
		if end.IsZero() || left.expiresAt.IsZero() {
			return left.expiresAt
		}
		return minTime(end, left.expiresAt)
	case l.kind == messages.KindReadLock, l.kind == messages.KindWriteLock && !release:
		return end
	case end.IsZero() && release:
		return end // a watchdog holding's unlock: the renewer tells
	case end.IsZero():
		// A watchdog holding's reentry with an explicit lease (the caller
		// asks only then): the TTL may now be that lease.
		return started.Add(lease - ttlGrain)
	default:
		return minTime(end, started.Add(lease-ttlGrain))
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// unlockRefreshesLease tells whether an unlock that leaves holds sets the
// lock's TTL back to the holder's lease (a read unlock recomputes it from
// the surviving read holds instead).
func (l lockIO) unlockRefreshesLease() bool { return l.kind != messages.KindReadLock }

// held names owner's holding for the renewer: a group lock's with the
// values of the call (values).
func (l lockIO) held(owner string) redisio.Held {
	switch l.kind {
	case messages.KindGroupLock:
		return redisio.Held{Name: l.name, Field: owner, Values: strings.Join(l.values, redisio.GroupValueSep)}
	case messages.KindWriteLock:
		// The write holder may also read: its renewal must not cut a read
		// hold's longer lease.
		return redisio.Held{Name: l.name, Field: redisio.WriteField(owner), Shared: true}
	case messages.KindReadLock:
		return redisio.Held{Name: l.name, Field: owner, ReadPrefix: redisio.ReadTimeoutPrefix(l.name, owner), Shared: true}
	default:
		return redisio.Held{Name: l.name, Field: owner}
	}
}

// allowance is a fair waiter's allowance in the queue: its wait, or
// fairAllowance.
func allowance(req *messages.Acquire) time.Duration {
	if req.Wait > 0 {
		return req.Wait
	}
	return fairAllowance
}

// acquire runs one attempt of w with lease through its kind's script and
// returns the outcome and how many replicas acknowledged it. A try-once
// attempt (w.try) must never take a place in a fair lock's queue: the
// fair scripts are told not to enqueue it.
func (l lockIO) acquire(ctx context.Context, w *waiter, lease time.Duration) (redisio.AcquireResult, int, error) {
	cfg, req := l.cfg, w.req
	rs := cfg.ReplicaSync
	switch l.kind {
	case messages.KindFairLock:
		return cfg.Scripts.FairAcquire(ctx, cfg.Redis, rs, l.name, req.Owner, req.RequestID, lease, allowance(req),
			cfg.placeTime(req), cfg.Clock.Now(), !w.try)
	case messages.KindReadLock:
		return cfg.Scripts.ReadAcquire(ctx, cfg.Redis, rs, l.name, req.Owner, req.RequestID, lease)
	case messages.KindWriteLock:
		return cfg.Scripts.WriteAcquire(ctx, cfg.Redis, rs, l.name, req.Owner, req.RequestID, lease)
	case messages.KindFencedLock:
		return cfg.Scripts.AcquireWith(ctx, cfg.Redis, rs, l.lockArgs(), req.Owner, req.RequestID, lease, true, false)
	case messages.KindGroupLock:
		return cfg.Scripts.GroupAcquire(ctx, cfg.Redis, rs, l.name, req.Owner, req.RequestID, lease, l.values)
	case messages.KindNonReentrantLock:
		return cfg.Scripts.AcquireWith(ctx, cfg.Redis, rs, l.lockArgs(), req.Owner, req.RequestID, lease, false, true)
	case messages.KindNonReentrantFairLock:
		return cfg.Scripts.NonReentrantFairAcquire(ctx, cfg.Redis, rs, l.name, req.Owner, req.RequestID, lease,
			allowance(req), cfg.placeTime(req), cfg.Clock.Now(), !w.try)
	default:
		return cfg.Scripts.AcquireWith(ctx, cfg.Redis, rs, l.lockArgs(), req.Owner, req.RequestID, lease, false, false)
	}
}

// replicaTries bounds the tries of an acquire its replicas do not
// acknowledge.
const replicaTries = 3

// acquireSynced runs one acquire attempt. With replica sync, an acquire the
// replicas do not acknowledge is undone (by its request ID, so exactly the
// hold it added) and tried again, replicaTries times at most.
func (l lockIO) acquireSynced(ctx context.Context, w *waiter, lease time.Duration) (redisio.AcquireResult, error) {
	rs := l.cfg.ReplicaSync
	for try := 1; ; try++ {
		res, acks, err := l.acquire(ctx, w, lease)
		if err != nil || !res.Acquired || acks >= rs.Replicas {
			return res, err
		}
		if _, err := l.undo(ctx, w.req.Owner, w.req.RequestID); err != nil {
			return redisio.AcquireResult{}, err
		}
		if try == replicaTries {
			return redisio.AcquireResult{}, fmt.Errorf("%w: acquire %s: %d of %d replicas acknowledged in %v, %d tries",
				messages.ErrNotReplicated, l.name, acks, rs.Replicas, rs.Timeout, try)
		}
	}
}

// handsOff tells whether an unlock of the last hold may hand the lock to a
// local waiter in the same round trip: the reentrant, fenced and fair
// locks (the fair one only to its local head waiter, which takes the lock
// when it is also the head of Redis's queue), without replica sync (each
// write then waits for its own WAIT).
func (l lockIO) handsOff() bool {
	switch l.kind {
	case messages.KindLock, messages.KindFencedLock, messages.KindFairLock, messages.KindNonReentrantFairLock:
		return l.cfg.ReplicaSync.Replicas == 0
	}
	return false
}

// handoff releases o's last hold and acquires for o.next in one round
// trip; see redisio.Scripts.Handoff and FairHandoff.
func (l lockIO) handoff(ctx context.Context, o *op, lease time.Duration) redisio.HandoffResult {
	w := o.next
	toLease := w.req.Lease
	if toLease == 0 {
		toLease = l.cfg.Watchdog
	}
	if l.perWaiter() {
		return l.cfg.Scripts.FairHandoff(ctx, l.cfg.Redis, redisio.FairHandoff{Name: l.name,
			NonReentrant: l.kind == messages.KindNonReentrantFairLock,
			From:         o.owner, FromReqID: o.reqID, FromLease: lease,
			To: w.req.Owner, ToReqID: w.req.RequestID, ToLease: toLease, Allowance: allowance(w.req),
			Place: l.cfg.placeTime(w.req), Now: l.cfg.Clock.Now()})
	}
	return l.cfg.Scripts.Handoff(ctx, l.cfg.Redis, redisio.Handoff{Name: l.name, Args: l.lockArgs(), Fenced: l.kind == messages.KindFencedLock,
		From: o.owner, FromReqID: o.reqID, FromLease: lease, To: w.req.Owner, ToReqID: w.req.RequestID, ToLease: toLease})
}

// unlock releases one hold of owner's with its kind's script; see
// redisio.Scripts.UnlockWith.
func (l lockIO) unlock(ctx context.Context, owner, reqID string, lease time.Duration) (remaining int, held bool, acks int, err error) {
	cfg := l.cfg
	rs := cfg.ReplicaSync
	switch l.kind {
	case messages.KindFairLock, messages.KindNonReentrantFairLock:
		return cfg.Scripts.FairUnlock(ctx, cfg.Redis, rs, l.name, owner, reqID, lease, cfg.Clock.Now())
	case messages.KindReadLock:
		return cfg.Scripts.ReadUnlock(ctx, cfg.Redis, rs, l.name, owner, reqID, lease)
	case messages.KindWriteLock:
		return cfg.Scripts.WriteUnlock(ctx, cfg.Redis, rs, l.name, owner, reqID, lease)
	case messages.KindSpinLock:
		return cfg.Scripts.UnlockWith(ctx, cfg.Redis, rs, l.lockArgs(), owner, reqID, lease, false)
	case messages.KindGroupLock:
		return cfg.Scripts.GroupUnlock(ctx, cfg.Redis, rs, l.name, owner, reqID, lease, l.values)
	default:
		return cfg.Scripts.UnlockWith(ctx, cfg.Redis, rs, l.lockArgs(), owner, reqID, lease, true)
	}
}

// undo reverses the acquire reqID of owner's if Redis applied it.
func (l lockIO) undo(ctx context.Context, owner, reqID string) (bool, error) {
	cfg := l.cfg
	switch l.kind {
	case messages.KindFairLock, messages.KindNonReentrantFairLock:
		return cfg.Scripts.FairUndoAcquire(ctx, cfg.Redis, l.name, owner, reqID, cfg.Clock.Now())
	case messages.KindReadLock:
		return cfg.Scripts.ReadUndoAcquire(ctx, cfg.Redis, l.name, owner, reqID)
	case messages.KindWriteLock:
		return cfg.Scripts.WriteUndoAcquire(ctx, cfg.Redis, l.name, owner, reqID)
	case messages.KindSpinLock:
		return cfg.Scripts.SpinUndoAcquire(ctx, cfg.Redis, l.name, owner, reqID)
	case messages.KindGroupLock:
		return cfg.Scripts.GroupUndoAcquire(ctx, cfg.Redis, l.name, owner, reqID, l.values)
	default:
		return cfg.Scripts.UndoAcquire(ctx, cfg.Redis, l.name, owner, reqID)
	}
}

// holdCount reads owner's hold count.
func (l lockIO) holdCount(ctx context.Context, owner string) (int, error) {
	cfg := l.cfg
	switch l.kind {
	case messages.KindReadLock:
		return redisio.ReadHoldCount(ctx, cfg.Redis, l.name, owner)
	case messages.KindWriteLock:
		return redisio.WriteHoldCount(ctx, cfg.Redis, l.name, owner)
	case messages.KindGroupLock:
		return redisio.GroupHoldCount(ctx, cfg.Redis, l.name, owner, l.values)
	default:
		return redisio.HoldCount(ctx, cfg.Redis, l.name, owner)
	}
}

// leaveQueue takes a fair waiter that gives up out of the queue, pulling the
// deadlines behind it forward. Other kinds keep no place in Redis.
func (l lockIO) leaveQueue(ctx context.Context, w *waiter) error {
	if !l.perWaiter() {
		return nil
	}
	cfg := l.cfg
	return cfg.Scripts.FairCancelWait(ctx, cfg.Redis, l.name, w.req.Owner, w.req.RequestID, allowance(w.req),
		cfg.Clock.Now())
}

// extend sets the lease of owner's holding anew; see
// redisio.Scripts.Extend.
func (l lockIO) extend(ctx context.Context, owner string, lease time.Duration) (bool, error) {
	if l.kind == messages.KindGroupLock {
		return l.cfg.Scripts.GroupExtend(ctx, l.cfg.Redis, l.name, owner, l.values, lease)
	}
	return l.cfg.Scripts.Extend(ctx, l.cfg.Redis, l.held(owner), lease)
}
