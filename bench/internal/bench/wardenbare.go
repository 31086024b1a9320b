package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/warden-go/warden/redisio"
)

// warden's own wire work without its engine: the calls warden's engine
// sends for a plain lock, made by package redisio straight from the
// caller's goroutine, with no actor, no reply channel, no watchdog and no
// subscription. Its scripts (the exactly-once records, the acquire record
// field, the publish) go through the same automatic pipelining (two or
// more acquires or unlocks at once as one batch script call). Waiters of
// one name queue in the process in order, as the engine's do: an Unlock
// with a waiter queued hands the lock to it in the unlock's round trip
// (redisio.Scripts.Handoff, the unlock and the next owner's acquire
// pipelined), up to maxBareHandoffs in a row, as the engine's streaks end;
// otherwise it unlocks, and a waiter that came meanwhile acquires for
// itself. So warden against this is what the engine costs on top of its
// own scripts.

// maxBareHandoffs is the engine's streak of handoffs (actors.maxHandoffs).
const maxBareHandoffs = 8

func newWardenBareContender(addr string, retry time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	scripts, err := redisio.NewScripts("publish")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = scripts.Load(ctx, rdb)
		cancel()
	}
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	b := &wardenBare{r: redisio.NewAutoPipeline(rdb), scripts: scripts, prefix: uuid.NewString()[:8] + ":",
		client: uuid.NewString(), retry: retry, queues: map[string]*bareQueue{}}
	return &Contender{
		Name: WardenBare, Role: RoleLock, Redis: rdb, Counter: cnt,
		Waits: fmt.Sprintf("baseline, not a library: warden's plain-lock scripts by package redisio from the caller's "+
			"goroutine, automatic pipelining, no engine, lease %v; waiters queued in the process in order, handed the "+
			"lock in the unlock's round trip (%d in a row at most), a refused acquire retried every %v",
			PeerLease, maxBareHandoffs, retry),
		newMutex: b.mutex, waiters: b.waiters,
	}, nil
}

// wardenBare is the baseline's client: what a warden Client shares among
// its locks.
type wardenBare struct {
	r       *redisio.AutoPipeline
	scripts *redisio.Scripts
	prefix  string // request IDs: prefix and a number, as the Client's
	client  string // owners: client and a number
	retry   time.Duration
	owners  atomic.Uint64
	reqs    atomic.Uint64
	mu      sync.Mutex
	queues  map[string]*bareQueue
}

func (b *wardenBare) mutex(name string) Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[name]
	if q == nil {
		q = &bareQueue{name: name, args: b.scripts.LockArgs(name)}
		b.queues[name] = q
	}
	return &bareMutex{b: b, q: q, owner: b.client + ":" + strconv.FormatUint(b.owners.Add(1), 10)}
}

func (b *wardenBare) waiters(name string) int {
	b.mu.Lock()
	q := b.queues[name]
	b.mu.Unlock()
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}

func (b *wardenBare) requestID() string { return b.prefix + strconv.FormatUint(b.reqs.Add(1), 10) }

// bareQueue is one name: whether an owner of this process holds it (or
// takes it), and its waiters in arrival order.
type bareQueue struct {
	name     string
	args     *redisio.LockArgs
	mu       sync.Mutex
	held     bool
	handoffs int // in a row
	waiters  []*bareWaiter
}

// bareWaiter is a queued Lock; its channel tells it whether the lock was
// handed to it (true) or it takes it itself (false).
type bareWaiter struct {
	owner, reqID string
	woken        chan bool
}

// bareMutex is one goroutine's handle: its own owner.
type bareMutex struct {
	b     *wardenBare
	q     *bareQueue
	owner string
	timer *time.Timer
}

var errBareLost = errors.New("bench: warden-bare: lock not held at unlock")

func (m *bareMutex) Lock(ctx context.Context) error {
	q := m.q
	q.mu.Lock()
	if q.held {
		w := &bareWaiter{owner: m.owner, reqID: m.b.requestID(), woken: make(chan bool, 1)}
		q.waiters = append(q.waiters, w)
		q.mu.Unlock()
		select {
		case handed := <-w.woken:
			if handed {
				return nil
			}
		case <-ctx.Done():
			m.leave(ctx, w)
			return ctx.Err()
		}
	} else {
		q.held = true
		q.mu.Unlock()
	}
	if err := m.acquire(ctx); err != nil {
		m.passOn()
		return err
	}
	return nil
}

// leave withdraws w, whose Lock's ctx ended: from the queue, or, woken
// meanwhile, by passing on what it was given.
func (m *bareMutex) leave(ctx context.Context, w *bareWaiter) {
	q := m.q
	q.mu.Lock()
	for i, o := range q.waiters {
		if o == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			q.mu.Unlock()
			return
		}
	}
	q.mu.Unlock()
	if <-w.woken { // handed the lock in Redis: given back
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = m.Unlock(uctx)
		return
	}
	m.passOn()
}

// passOn wakes the first waiter to take the lock itself, or frees the
// name.
func (m *bareMutex) passOn() {
	q := m.q
	q.mu.Lock()
	var next *bareWaiter
	if len(q.waiters) > 0 {
		next = q.waiters[0]
		q.waiters = q.waiters[1:]
	} else {
		q.held = false
	}
	q.mu.Unlock()
	if next != nil {
		next.woken <- false
	}
}

// acquire takes the lock in Redis for m's owner, retrying while another
// process holds it.
func (m *bareMutex) acquire(ctx context.Context) error {
	for {
		res, _, err := m.b.scripts.AcquireWith(ctx, m.b.r, redisio.ReplicaSync{}, m.q.args, m.owner, m.b.requestID(),
			PeerLease, false, false)
		if err != nil || res.Acquired {
			return err
		}
		if err := pause(ctx, &m.timer, m.b.retry); err != nil {
			return err
		}
	}
}

func (m *bareMutex) Unlock(ctx context.Context) error {
	q := m.q
	q.mu.Lock()
	var next *bareWaiter
	if len(q.waiters) > 0 && q.handoffs < maxBareHandoffs {
		next = q.waiters[0]
		q.waiters = q.waiters[1:]
		q.handoffs++
	} else {
		q.handoffs = 0
	}
	q.mu.Unlock()
	if next != nil {
		r := m.b.scripts.Handoff(ctx, m.b.r, redisio.Handoff{Name: q.name, Args: q.args,
			From: m.owner, FromReqID: m.b.requestID(), FromLease: PeerLease,
			To: next.owner, ToReqID: next.reqID, ToLease: PeerLease})
		switch {
		case r.UnlockErr != nil:
			next.woken <- false
			return r.UnlockErr
		case r.AcquireErr != nil || !r.Acquire.Acquired:
			next.woken <- false // it asks again itself
		default:
			next.woken <- true
		}
		if !r.Held || r.Remaining != 0 {
			return errBareLost
		}
		return nil
	}
	remaining, held, _, err := m.b.scripts.UnlockWith(ctx, m.b.r, redisio.ReplicaSync{}, q.args, m.owner,
		m.b.requestID(), PeerLease, true)
	m.passOn()
	if err == nil && (!held || remaining != 0) {
		err = errBareLost
	}
	return err
}
