package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

const (
	// idleWorkers is how many goroutines the pool starts with.
	idleWorkers = 8
	// poolWorkers bounds the goroutines the pool keeps: a goroutine started
	// for work that found no idle worker stays in the pool after it, up to
	// this many in all, so that under steady load the next piece of work
	// finds a goroutine waiting with its grown stack (until a garbage
	// collection shrinks an idle one) instead of growing a new one.
	poolWorkers = 64
	// throughput is how many messages a mailbox handles per turn on a worker.
	throughput = 300
)

// Workers is the engine's goroutine pool. It runs the actors' mailboxes (it
// is their dispatcher) and their Redis calls on goroutines that keep their
// grown stacks, which a fresh goroutine per mailbox turn or per call would
// have to grow again every time. Work is handed to an idle worker if one is
// waiting, else to a new goroutine, so handing off never blocks; that
// goroutine then joins the pool while it has fewer than poolWorkers. The
// Client owns it: it is stopped once the actors have stopped.
type Workers struct {
	// schedule, when set, takes every piece of work instead of the pool
	// (NewWorkersOn).
	schedule func(fn func())
	jobs     chan job
	pooled   atomic.Int32 // goroutines that stay in the pool
	mu       sync.RWMutex // guards stopped against a late Schedule racing Stop
	stopped  bool
	wg       sync.WaitGroup
}

var _ actor.Dispatcher = (*Workers)(nil)

// NewWorkers starts the pool.
func NewWorkers() *Workers {
	w := &Workers{jobs: make(chan job)}
	w.pooled.Store(idleWorkers)
	w.wg.Add(idleWorkers)
	for range idleWorkers {
		go func() {
			defer w.wg.Done()
			w.work()
		}()
	}
	return w
}

// work runs the pool's work until Stop.
func (w *Workers) work() {
	for j := range w.jobs {
		j.run()
	}
}

// job is a piece of work for the pool. A job that carries its own state (a
// key actor's request, op) is handed over without the allocation a closure
// over that state would cost.
type job interface{ run() }

// funcJob is a closure as a job; a func value converts to an interface
// without allocating.
type funcJob func()

func (f funcJob) run() { f() }

// NewWorkersOn hands every piece of work to schedule instead of a pool of
// goroutines: a simulation (package sim) runs the engine's actors and
// Redis calls one at a time, in an order it draws from its seed. Stop
// then does nothing; the caller owns what schedule started.
func NewWorkersOn(schedule func(fn func())) *Workers {
	return &Workers{schedule: schedule}
}

// Schedule runs fn on an idle worker or a new goroutine (which stays in the
// pool after fn while the pool is not full). After Stop (a
// late timer's message to a stopped engine) it runs fn on the caller's
// goroutine. It implements actor.Dispatcher.
func (w *Workers) Schedule(fn func()) { w.run(funcJob(fn)) }

// run is Schedule for a job.
func (w *Workers) run(j job) {
	if w.schedule != nil {
		w.schedule(j.run)
		return
	}
	w.mu.RLock()
	if w.stopped {
		w.mu.RUnlock()
		j.run()
		return
	}
	defer w.mu.RUnlock()
	select {
	case w.jobs <- j:
		return
	default:
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		j.run()
		if w.pooled.Add(1) > poolWorkers {
			w.pooled.Add(-1)
			return
		}
		w.work()
	}()
}

// runsInline tells whether an actor's mailbox pass may run on the goroutine
// that posts to the idle mailbox: always but on a simulation's schedule
// (NewWorkersOn), which runs every pass itself, in its own order.
func (w *Workers) runsInline() bool { return w.schedule == nil }

// Throughput implements actor.Dispatcher.
func (w *Workers) Throughput() int { return throughput }

// Stop ends the idle workers and waits for every piece of work handed to
// the pool to return.
func (w *Workers) Stop() {
	if w.schedule != nil {
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.stopped = true
		close(w.jobs)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
