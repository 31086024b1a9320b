package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The FIFO floor is a baseline for the contended workload, not a lock: the
// least a lock that serves its waiters in order, and lets the next one in
// only once Redis has been told, can cost in one process. Waiters queue in
// the process; a Lock on a free name and every Unlock make one PING round
// trip (standing for the script that takes the lock, or that releases it
// and gives it to the next waiter in one go), and an Unlock with waiters
// then wakes the first of them. So each acquisition of a contended name
// pays one round trip and one wake-up of another goroutine, and no holder
// takes the lock again while others wait. A lock that barges (its releaser
// re-acquires at once while the others sleep between polls) pays neither.

func newFIFOFloorContender(addr string, _ time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	var (
		mu     sync.Mutex
		queues = map[string]*fifoQueue{}
	)
	return &Contender{
		Name: FIFOFloor, Role: RoleFIFOFloor, Redis: rdb, Counter: cnt,
		Waits: "baseline, not a lock: waiters queued in the process in order; a Lock on a free name and every " +
			"Unlock one PING round trip, then the Unlock wakes the next waiter (one round trip and one " +
			"wake-up an acquisition, no re-acquire while others wait)",
		newMutex: func(name string) Mutex {
			mu.Lock()
			defer mu.Unlock()
			q := queues[name]
			if q == nil {
				q = &fifoQueue{rdb: rdb}
				queues[name] = q
			}
			return q
		},
	}, nil
}

// fifoQueue is one name of the FIFO floor: whether it is held, and the
// waiters in arrival order, each woken by closing its channel.
type fifoQueue struct {
	rdb     *redis.Client
	mu      sync.Mutex
	held    bool
	waiters []chan struct{}
}

// errFIFOFloorNotHeld is an Unlock of a name nobody holds.
var errFIFOFloorNotHeld = errors.New("bench: fifo floor: unlock of a name not held")

func (q *fifoQueue) Lock(ctx context.Context) error {
	q.mu.Lock()
	if !q.held {
		q.held = true
		q.mu.Unlock()
		if err := q.rdb.Ping(ctx).Err(); err != nil {
			q.pass()
			return err
		}
		return nil
	}
	woken := make(chan struct{})
	q.waiters = append(q.waiters, woken)
	q.mu.Unlock()
	select {
	case <-woken:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	for i, w := range q.waiters {
		if w == woken {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			q.mu.Unlock()
			return ctx.Err()
		}
	}
	q.mu.Unlock()
	// Woken as the context ended: it holds the name, so it passes it on.
	q.pass()
	return ctx.Err()
}

func (q *fifoQueue) Unlock(ctx context.Context) error {
	q.mu.Lock()
	held := q.held
	q.mu.Unlock()
	if !held {
		return errFIFOFloorNotHeld
	}
	err := q.rdb.Ping(ctx).Err()
	q.pass()
	return err
}

// pass gives the name to the first waiter, or frees it.
func (q *fifoQueue) pass() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		q.held = false
		return
	}
	next := q.waiters[0]
	q.waiters = q.waiters[1:]
	close(next)
}
