package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// epoch is the wall-clock time every simulation starts at.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is something the driver does at a point of simulated time: fire a
// timer, deliver a Redis reply or a pub/sub message, run a command at
// Redis, begin or end a fault.
type event struct {
	at  time.Duration
	seq uint64
	// cl is the client the event happens in, nil for Redis's side. A
	// paused client's events wait for the pause to end; a crashed client's
	// are dropped.
	cl   *client
	fire func()
	dead bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// job is one piece of an engine's work: a mailbox's turn or a Redis call,
// run on a goroutine of its own but only while the driver waits for it, so
// exactly one goroutine of the simulation runs at a time.
type job struct {
	cl *client
	fn func()
	// resume hands a parked job the baton again; nil until the job starts.
	resume chan struct{}
	// ctxDeadline is the wall-clock deadline of the context of the job's
	// last Redis call, simDeadline the same bound in simulated time.
	ctxDeadline time.Time
	simDeadline time.Duration
}

// world is one simulation's scheduler: the simulated time, the events to
// come in (time, sequence) order, the jobs ready to run, and the seed's
// random source. Only the goroutine holding the baton (the driver, or the
// one job it runs) touches it.
type world struct {
	rng      *rand.Rand
	now      time.Duration
	seq      uint64
	events   eventHeap
	runnable []*job
	current  *job
	parked   map[*job]bool
	yield    chan struct{}
	steps    int
	tr       *trace

	// teardown is set once the run is over: work then runs freely on
	// goroutines of its own, calls fail at once, so every engine can stop.
	teardown atomic.Bool
	// goroutines counts every goroutine the world started: the jobs', and
	// work run freely after the run.
	goroutines sync.WaitGroup

	// stepTimeout bounds the wall time of one job (engineStepTimeout, or a
	// user workload's StepTimeout): a job that takes longer is abandoned
	// (abandoned), and the run ends with the error blocked returns. err is the error that ends the
	// run early (a blocked or panicking user step); done is closed when
	// the run ends, so that an abandoned job's goroutine never waits for
	// the driver.
	stepTimeout time.Duration
	// jobDelay, when set (by tests), makes a quarter of the jobs runnable
	// up to that long after they were scheduled, as a goroutine left
	// without a CPU for a while would run: the work of events at
	// different instants then interleaves (schedule).
	jobDelay time.Duration
	// delayed holds the jobs jobDelay holds back, until their event makes
	// them runnable; stop runs those still held, as it runs the runnable.
	delayed   map[*job]bool
	blocked   func() error
	abandoned bool
	err       atomic.Pointer[StepError]
	done      chan struct{}
}

// engineStepTimeout is how long of wall time one job of a run without a
// user workload may take: an engine job that waits on a channel the
// simulation does not drive (a key actor stopping while a call of its is
// still due, say) ends the run with ErrBlocked instead of hanging it.
const engineStepTimeout = 10 * time.Second

func newWorld(seed int64, tr *trace) *world {
	w := &world{
		rng:         rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		yield:       make(chan struct{}),
		done:        make(chan struct{}),
		parked:      map[*job]bool{},
		tr:          tr,
		stepTimeout: engineStepTimeout,
	}
	w.blocked = func() error {
		return &StepError{Seed: seed, Step: w.steps, At: w.now, Process: -1, Message: "(an engine step)", kind: ErrBlocked}
	}
	return w
}

// at schedules fire at simulated time t (not before now).
func (w *world) at(t time.Duration, cl *client, fire func()) *event {
	if t < w.now {
		t = w.now
	}
	w.seq++
	e := &event{at: t, seq: w.seq, cl: cl, fire: fire}
	heap.Push(&w.events, e)
	return e
}

// after schedules fire d from now.
func (w *world) after(d time.Duration, cl *client, fire func()) *event {
	return w.at(w.now+d, cl, fire)
}

// schedule makes fn a runnable job of cl. After the run it starts fn on a
// goroutine of its own.
func (w *world) schedule(cl *client, fn func()) {
	if w.teardown.Load() {
		w.goroutines.Go(fn)
		return
	}
	j := &job{cl: cl, fn: fn}
	if w.jobDelay > 0 && w.rng.IntN(4) == 0 {
		if w.delayed == nil {
			w.delayed = map[*job]bool{}
		}
		w.delayed[j] = true
		w.after(1+time.Duration(w.rng.Int64N(int64(w.jobDelay))), cl, func() {
			delete(w.delayed, j)
			w.runnable = append(w.runnable, j)
		})
		return
	}
	w.runnable = append(w.runnable, j)
}

// park gives the baton back to the driver from the running job and waits
// until the driver resumes it (after ready).
func (w *world) park() {
	if w.teardown.Load() {
		return
	}
	j := w.current
	w.parked[j] = true
	w.handBack()
	<-j.resume
}

// ready makes a parked job runnable again.
func (w *world) ready(j *job) {
	if w.teardown.Load() {
		return // stop resumed it
	}
	delete(w.parked, j)
	w.runnable = append(w.runnable, j)
}

// runJob hands the baton to j until it ends or parks.
func (w *world) runJob(j *job) {
	w.current = j
	if j.resume == nil {
		j.resume = make(chan struct{}, 1)
		w.goroutines.Go(func() {
			j.fn()
			if !w.teardown.Load() {
				w.handBack()
			}
		})
	} else {
		j.resume <- struct{}{}
	}
	w.await()
	w.current = nil
}

// handBack gives the baton back to the driver, unless the run is over.
func (w *world) handBack() {
	select {
	case w.yield <- struct{}{}:
	case <-w.done:
	}
}

// await waits for the running job to give the baton back: at most
// stepTimeout of wall time when that is set, after which the job is
// abandoned and the run fails.
func (w *world) await() {
	if w.stepTimeout <= 0 {
		<-w.yield
		return
	}
	t := time.NewTimer(w.stepTimeout)
	defer t.Stop()
	select {
	case <-w.yield:
	case <-t.C:
		w.abandoned = true
		if err, ok := w.blocked().(*StepError); ok {
			w.fail(err)
		}
	}
}

// fail ends the run with err, unless an error already did.
func (w *world) fail(err *StepError) {
	w.err.CompareAndSwap(nil, err)
}

// step runs one runnable job, picked by the seed among those whose client
// is neither paused nor crashed; else it fires the next event, moving time
// forward to it. It reports false when there is nothing left to do before
// until.
func (w *world) step(until time.Duration) bool {
	w.steps++
	if n := w.eligible(); n > 0 {
		k := w.rng.IntN(n)
		for i, j := range w.runnable {
			if !w.runs(j.cl) {
				continue
			}
			if k == 0 {
				w.runnable = append(w.runnable[:i], w.runnable[i+1:]...)
				w.runJob(j)
				return true
			}
			k--
		}
	}
	for w.events.Len() > 0 && w.events[0].at <= until {
		e := heap.Pop(&w.events).(*event)
		if e.dead || (e.cl != nil && e.cl.crashed) {
			continue
		}
		w.now = e.at
		if e.cl != nil && e.cl.pausedUntil > w.now {
			// The same event, so that a timer stopped meanwhile stays
			// stopped: it fires when the pause ends, after what is due then.
			w.seq++
			e.at, e.seq = e.cl.pausedUntil, w.seq
			heap.Push(&w.events, e)
			continue
		}
		e.fire()
		return true
	}
	return false
}

// eligible counts the runnable jobs whose client runs.
func (w *world) eligible() int {
	n := 0
	for _, j := range w.runnable {
		if w.runs(j.cl) {
			n++
		}
	}
	return n
}

// runs tells whether cl's work may run now.
func (w *world) runs(cl *client) bool {
	return cl == nil || (!cl.crashed && cl.pausedUntil <= w.now)
}

// stop ends the run: from now on work runs freely, and every parked job is
// resumed (its call then fails) so that the engines can be stopped. Wait
// for w.goroutines once they are.
func (w *world) stop() {
	w.teardown.Store(true)
	close(w.done)
	for j := range w.parked {
		w.runnable = append(w.runnable, j)
	}
	w.parked = nil
	for j := range w.delayed {
		w.runnable = append(w.runnable, j)
	}
	w.delayed = nil
	for _, j := range w.runnable {
		if j.resume != nil {
			j.resume <- struct{}{} // buffered: it never blocks
		} else {
			w.schedule(j.cl, j.fn)
		}
	}
	w.runnable = nil
}

// maxSteps bounds the jobs and events of one run: a run that needs more
// is spinning.
const maxSteps = 5_000_000

// run steps the world until nothing is left to do before length, then
// moves time to length. It fails a run that takes more than maxSteps.
func (w *world) run(seed int64, length time.Duration) error {
	for w.step(length) {
		if err := w.err.Load(); err != nil {
			return err
		}
		if w.steps > maxSteps {
			return fmt.Errorf("sim: seed %d: more than %d steps by %v", seed, maxSteps, w.now)
		}
	}
	w.now = length
	return nil
}

// shutdown ends the run (stop), stops every engine and waits for every
// goroutine the world started.
func (w *world) shutdown(clients []*client) {
	w.stop()
	for _, cl := range clients {
		cl.stop()
	}
	if !w.abandoned { // an abandoned job's goroutine ends when it returns
		w.goroutines.Wait()
	}
}

// epochNow is the wall-clock reading of simulated time now.
func (w *world) epochNow() time.Time { return epoch.Add(w.now) }

// jitter returns a duration in [lo, hi] drawn from the seed.
func (w *world) jitter(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

// permitID draws a permit ID from the seed: 16 bytes as 32 lowercase hex
// characters, the engine's format (redisio.NewPermitID's, which reads
// crypto/rand).
func (w *world) permitID() string {
	return fmt.Sprintf("%016x%016x", w.rng.Uint64(), w.rng.Uint64())
}

// chance draws true with probability p.
func (w *world) chance(p float64) bool {
	return p > 0 && w.rng.Float64() < p
}
