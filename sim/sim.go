package sim

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// Options describe one simulation run. Run fills in the zero fields.
type Options struct {
	Seed int64
	// Clients is how many engines run (default 3); Owners how many workers
	// each has (default 2).
	Clients int
	Owners  int
	// Length is the run's simulated length (default 20s).
	Length time.Duration
	// Faults are the kinds of fault the seed may inject (none by default;
	// AllFaults() lists every kind).
	Faults []FaultKind
	// Kinds are the primitives the workload uses (default: reentrant,
	// fenced, fair, read and write locks, a semaphore, a permit-expirable
	// semaphore, a count-down latch, a spin lock, and the non-reentrant
	// and non-reentrant fair locks); Names how many names of each
	// (default 2). FamilyKinds lists the kinds the workload can use beyond
	// the default ones (the group lock).
	Kinds []messages.Kind
	Names int
	// NoMultiLocks keeps MultiLocks out of the workload. Otherwise, when
	// Kinds has reentrant or fair locks, each owner takes MultiLocks over
	// them instead of single primitives with a chance of one in three
	// (drawn from the seed). With NoMultiLocks a seed runs the workload it
	// ran before MultiLocks joined, byte for byte.
	NoMultiLocks bool
	// Permits is each semaphore's permit count, the permit-expirable ones'
	// too (default 2).
	Permits int64
	// Watchdog is the engines' watchdog lease (default 3s); Lease the
	// explicit lease some acquires take (default 2s); IdleTimeout how long
	// an engine keeps an idle key actor (default 5s).
	Watchdog    time.Duration
	Lease       time.Duration
	IdleTimeout time.Duration
	// Latency is every network trip's delay (default 200µs); with the
	// latency fault each trip takes up to MaxLatency (default 20ms), so
	// messages overtake each other.
	Latency    time.Duration
	MaxLatency time.Duration
	// LossRate is the chance that one request, reply or message is lost
	// when that fault is on (default 0.02).
	LossRate float64
	// KeepTrace keeps the trace's lines in the Result, not just its hash.
	KeepTrace bool
	// Workload, when set, runs the user's own actors in each process
	// (instead of the built-in workload, unless Workload.Builtin) and
	// checks the user's invariants too. See Workload.
	Workload *Workload

	// newPermitID, when set (by tests), replaces the seed's permit IDs.
	newPermitID func() string
	// passivations, when set (by tests), hears at the run's end how many
	// idle key actors the engines' roots stopped, and how many
	// passivations they refused because a request was sent straight to
	// the actor after it asked (actors.Routes.Passivations).
	passivations func(stopped, refused uint64)
	// jobDelay (set by tests) delays a quarter of the engines' jobs by up
	// to that long (world.jobDelay).
	jobDelay time.Duration
	// doubleCountDown (set by tests) makes each count-down of a latch run
	// twice, under two request IDs: a broken count-down.
	doubleCountDown bool
	// brokenMulti (set by tests) breaks the workload's MultiLocks.
	brokenMulti brokenMultiLock
	// spinBackOff (set by tests) is the back-off of the workload's spin
	// lock acquires; zero: the default.
	spinBackOff messages.BackOff
}

// allFaults is every fault the simulation can inject, in the order
// AllFaults lists them.
var allFaults = []FaultKind{FaultLatency, FaultLostReply, FaultLostRequest, FaultLostMessage, FaultPartition,
	FaultCrash, FaultPause, FaultRestart, FaultClockJump}

// AllFaults returns every fault the simulation can inject (a new slice on
// each call).
func AllFaults() []FaultKind { return slices.Clone(allFaults) }

// ParseFaults reads a comma-separated list of fault kinds; "all" is every
// kind, "" none.
func ParseFaults(s string) ([]FaultKind, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	if s == "all" {
		return AllFaults(), nil
	}
	var out []FaultKind
	for _, f := range strings.Split(s, ",") {
		k := FaultKind(strings.TrimSpace(f))
		if !slices.Contains(allFaults, k) {
			return nil, fmt.Errorf("sim: unknown fault %q (known: %v)", k, allFaults)
		}
		out = append(out, k)
	}
	return out, nil
}

func (o *Options) has(k FaultKind) bool { return slices.Contains(o.Faults, k) }

// trip is the longest one network trip takes in a run with o.
func (o *Options) trip() time.Duration {
	if o.has(FaultLatency) {
		return o.MaxLatency
	}
	return o.Latency
}

// rate is the chance of a loss of kind k.
func (o *Options) rate(k FaultKind) float64 {
	if o.has(k) {
		return o.LossRate
	}
	return 0
}

// workloadKinds are the primitives the workload can use, its default.
var workloadKinds = []messages.Kind{messages.KindLock, messages.KindFencedLock, messages.KindFairLock,
	messages.KindReadLock, messages.KindWriteLock, messages.KindSemaphore, messages.KindPermitSemaphore,
	messages.KindCountDownLatch,
	messages.KindSpinLock, messages.KindNonReentrantLock, messages.KindNonReentrantFairLock}

// FamilyKinds are the kinds the workload can use that are not in its
// default set: a run asks for them in Options.Kinds, so that the seeds of
// the default workload replay as before, byte for byte. A group lock's
// owners each ask for one to three of the values "a".."d" of the group
// at once.
var FamilyKinds = []messages.Kind{messages.KindGroupLock}

// defaults fills in o's zero fields and checks the rest.
func (o *Options) defaults() error {
	o.Clients = cmp.Or(o.Clients, 3)
	o.Owners = cmp.Or(o.Owners, 2)
	o.Names = cmp.Or(o.Names, 2)
	o.Permits = cmp.Or(o.Permits, 2)
	o.LossRate = cmp.Or(o.LossRate, 0.02)
	o.Length = cmp.Or(o.Length, 20*time.Second)
	o.Watchdog = cmp.Or(o.Watchdog, 3*time.Second)
	o.Lease = cmp.Or(o.Lease, 2*time.Second)
	o.IdleTimeout = cmp.Or(o.IdleTimeout, 5*time.Second)
	o.Latency = cmp.Or(o.Latency, 200*time.Microsecond)
	o.MaxLatency = cmp.Or(o.MaxLatency, 20*time.Millisecond)
	if len(o.Kinds) == 0 {
		o.Kinds = workloadKinds
	}
	if o.Workload != nil && o.Workload.Actors == nil {
		return fmt.Errorf("sim: Workload.Actors is nil")
	}
	if o.Workload != nil && o.Workload.StepTimeout < 0 {
		return fmt.Errorf("sim: Workload.StepTimeout %v is negative", o.Workload.StepTimeout)
	}
	switch {
	case o.Clients < 1 || o.Owners < 1 || o.Names < 1 || o.Permits < 1:
		return fmt.Errorf("sim: clients, owners, names and permits must be at least 1")
	case o.Length < time.Second:
		return fmt.Errorf("sim: length %v is under 1s", o.Length)
	case o.Watchdog <= 0 || o.Lease <= 0 || o.IdleTimeout <= 0 || o.Latency < 0 || o.MaxLatency < 0:
		return fmt.Errorf("sim: watchdog, lease and idle timeout must be positive, latencies not negative")
	case o.Watchdog%(3*time.Millisecond) != 0 || o.Lease%time.Millisecond != 0:
		return fmt.Errorf("sim: watchdog must be a multiple of 3ms and lease of 1ms")
	case o.LossRate < 0 || o.LossRate > 1:
		return fmt.Errorf("sim: loss rate %v is not a probability", o.LossRate)
	}
	for _, k := range o.Kinds {
		if !slices.Contains(workloadKinds, k) && !slices.Contains(FamilyKinds, k) {
			return fmt.Errorf("sim: the workload does not use %s", k)
		}
	}
	return nil
}

// Result is what one run recorded and what the checkers found.
type Result struct {
	History
	// Violations are the broken guarantees, excused or not.
	Violations []Violation
	// Unknown lists checks that could not decide (a linearizability check
	// that ran out of time).
	Unknown []string
	// Trace is the hash of the run's trace; Lines its text with KeepTrace.
	Trace string
	Lines []string
	// Steps is how many jobs and events the driver ran.
	Steps int
}

// Failed reports the violations no injected fault excuses.
func (r *Result) Failed() []Violation { return unexcused(r.Violations) }

// unexcused returns the violations of vs no injected fault excuses.
func unexcused(vs []Violation) []Violation {
	var out []Violation
	for _, v := range vs {
		if v.Excused == "" {
			out = append(out, v)
		}
	}
	return out
}

// Run runs one simulation: o.Clients engines, each with o.Owners workers,
// against one simulated Redis, for o.Length of simulated time, with the
// faults o.Faults allows drawn from o.Seed. The same options give the same
// trace, byte for byte.
func Run(o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tr := newTrace(o.KeepTrace)
	w := newWorld(o.Seed, tr)
	w.jobDelay = o.jobDelay
	r, err := newRedisSim(w, &o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	builtin := o.Workload == nil || o.Workload.Builtin
	var targets []target
	if builtin {
		targets = workloadTargets(&o, w)
	}
	rec := &recorder{w: w}
	r.setUp = func() error { return setUp(r, &o, targets, rec) }
	if err := r.setUp(); err != nil {
		return nil, err
	}
	clients := make([]*client, o.Clients)
	for i := range clients {
		cl := &client{id: i}
		clients[i] = cl
		if err := cl.start(w, r, &o); err != nil {
			return nil, err
		}
	}
	r.clients = clients
	defer w.shutdown(clients)
	members := multiMembers(&o, targets)
	var user *userRun
	if o.Workload != nil {
		user = newUserRun(w, &o, rec)
		for _, cl := range clients {
			if err := user.start(cl); err != nil {
				return nil, err
			}
		}
	}
	for _, cl := range clients {
		if !builtin {
			break
		}
		wl := &workload{w: w, o: &o, cl: cl, rec: rec, targets: targets, members: members,
			clock: &clientClock{w: w, cl: cl}}
		for j := range o.Owners {
			ow := &owner{i: j, cl: cl, id: fmt.Sprintf("c%d-o%d", cl.id, j), side: side{hold: -1}}
			if len(members) > 0 && w.chance(multiOwnerShare) {
				ow.multi = newMultiOwner()
			}
			wl.owners = append(wl.owners, ow)
		}
		cl.workload = cl.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return wl },
			actor.WithDispatcher(cl.workers)))
	}
	planFaults(w, r, &o, clients)
	if err := w.run(o.Seed, o.Length); err != nil {
		return nil, err
	}
	if o.passivations != nil {
		var stopped, refused uint64
		for _, cl := range clients {
			s, r := cl.routes.Passivations()
			stopped, refused = stopped+s, refused+r
		}
		o.passivations(stopped, refused)
	}
	for i := range rec.holds {
		if h := &rec.holds[i]; h.To < 0 {
			if clients[h.Client].crashed {
				h.end(clients[h.Client].crashedAt, EndCrashed)
			} else {
				h.end(o.Length, EndRunEnd)
			}
		}
	}
	res := &Result{
		History: History{Seed: o.Seed, Clients: o.Clients, Length: o.Length, Trip: o.trip(), Ops: rec.ops,
			Holds: rec.holds, Faults: r.faults, Multis: rec.multis},
		Trace: tr.sum(),
		Lines: tr.lines,
		Steps: w.steps,
	}
	if user != nil {
		res.Events, res.Log = user.events, user.log
	}
	res.Violations, res.Unknown = check(&res.History, &o)
	if user != nil {
		vs, err := user.check(&res.History)
		if err != nil {
			return nil, err
		}
		res.Violations = append(res.Violations, vs...)
		slices.SortStableFunc(res.Violations, func(a, b Violation) int { return cmp.Compare(a.At, b.At) })
	}
	return res, nil
}

// RunSeeds runs n seeds from first on with o (its Seed replaced), on as
// many goroutines as there are CPUs, and returns each seed's result and
// error, in seed order; n below 1 runs nothing (empty slices).
func RunSeeds(o Options, first int64, n int) ([]*Result, []error) {
	return runEach(first, n, func(seed int64) (*Result, error) {
		oi := o
		oi.Seed = seed
		return Run(oi)
	})
}

// runEach runs run for n seeds from first on, on as many goroutines as
// there are CPUs, and returns each seed's result and error, in seed order.
func runEach[R any](first int64, n int, run func(seed int64) (R, error)) ([]R, []error) {
	n = max(n, 0) // no seeds to run: no results
	results := make([]R, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				results[i], errs[i] = run(first + int64(i))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return results, errs
}

// latchPhases is how many count-down latches of each name a run counts
// down, one after the other: each phase of the run has its own.
const latchPhases = 2

// workloadTargets names the locks the workload uses: o.Names of each kind,
// the read and write locks sharing their names. A latch's counts, one per
// phase, are drawn from the seed.
func workloadTargets(o *Options, w *world) []target {
	var out []target
	for _, k := range o.Kinds {
		for i := range o.Names {
			t := target{name: fmt.Sprintf("%s-%d", strings.ReplaceAll(k.String(), " ", "-"), i), kind: k}
			switch k {
			case messages.KindReadLock, messages.KindWriteLock:
				t.name = fmt.Sprintf("rw-%d", i)
			case messages.KindCountDownLatch:
				for range latchPhases {
					t.counts = append(t.counts, 1+w.rng.Int64N(3))
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// setUp gives every semaphore its permits and sets every latch's count
// (each phase's latch) with the production script, as an application
// would when it starts, and again after a restart lost them. The latches'
// sets are recorded in the history: the latch checks count from them.
func setUp(r *redisSim, o *Options, targets []target, rec *recorder) error {
	ctx := context.Background()
	for _, t := range targets {
		switch t.kind {
		case messages.KindSemaphore, messages.KindPermitSemaphore:
			if err := r.exec.Set(ctx, t.name, o.Permits, 0).Err(); err != nil {
				return fmt.Errorf("sim: set up %s: %w", t.name, err)
			}
		case messages.KindCountDownLatch:
			for phase, n := range t.counts {
				name := t.latch(phase)
				i := rec.op(Op{Client: -1, Name: name, Kind: t.kind, Action: ActSetCount, Permits: n})
				ok, err := r.scripts.LatchTrySetCount(ctx, r.exec, name, n)
				if err != nil {
					return fmt.Errorf("sim: set up %s: %w", name, err)
				}
				r.lastPublished() // its new-count message wakes nobody: no waiter yet, or every connection lost
				rec.answer(i, ok, false, 0)
			}
		}
	}
	return nil
}
