package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/warden-go/warden/internal/quorum"
)

// RedLockOptions describe one RedLock run: several independent simulated
// Redis masters, each its own miniredis with its own network and faults,
// and several simulated processes, each running one warden engine per
// master. A process's engines share its fate: they pause, crash and see
// its clock jump together; a partition cuts the process off from one
// master. The owners of a process take a RedLock on a name through its
// engines, deciding as client.RedLock does (package internal/quorum).
type RedLockOptions struct {
	Seed int64
	// Masters is how many independent masters run (default 3); Processes
	// how many processes (default 3); Owners how many RedLock owners each
	// process has (default 2); Names how many names they share (default 2).
	Masters   int
	Processes int
	Owners    int
	Names     int
	// Length is the run's simulated length (default 10s).
	Length time.Duration
	// Faults are the kinds of fault the seed may inject: a restart hits
	// one master, a partition one process's link to one master, a pause,
	// clock jump or crash one process (with all its engines).
	Faults []FaultKind
	// Watchdog is the engines' watchdog lease (default 3s); Lease the fixed
	// lease of the owners' LockLease-style acquires (default 2s).
	Watchdog time.Duration
	Lease    time.Duration
	// Latency, MaxLatency and LossRate are as in Options, but for the
	// defaults of MaxLatency (10ms: a try's four trips, a NOSCRIPT's
	// included, fit the 50 ms per-node timeout) and LossRate (0.01: a lost
	// reply keeps one engine's key actor busy for redisio.IOTimeout, 10 s,
	// so losses stall a name on a master for the rest of a run).
	Latency    time.Duration
	MaxLatency time.Duration
	LossRate   float64
	KeepTrace  bool

	// quorum, when set (by tests), replaces the majority: a broken RedLock.
	quorum int
}

func (o *RedLockOptions) defaults() error {
	o.Masters = cmp.Or(o.Masters, 3)
	o.Processes = cmp.Or(o.Processes, 3)
	o.Owners = cmp.Or(o.Owners, 2)
	o.Names = cmp.Or(o.Names, 2)
	o.Length = cmp.Or(o.Length, 10*time.Second)
	o.Watchdog = cmp.Or(o.Watchdog, 3*time.Second)
	o.Lease = cmp.Or(o.Lease, 2*time.Second)
	o.Latency = cmp.Or(o.Latency, 200*time.Microsecond)
	o.MaxLatency = cmp.Or(o.MaxLatency, 10*time.Millisecond)
	o.LossRate = cmp.Or(o.LossRate, 0.01)
	switch {
	case o.Masters < 1 || o.Processes < 1 || o.Owners < 1 || o.Names < 1:
		return fmt.Errorf("sim: masters, processes, owners and names must be at least 1")
	case o.Length < time.Second:
		return fmt.Errorf("sim: length %v is under 1s", o.Length)
	case o.Watchdog <= 0 || o.Watchdog%(3*time.Millisecond) != 0 || o.Lease <= 0 || o.Lease%time.Millisecond != 0:
		return fmt.Errorf("sim: watchdog must be a positive multiple of 3ms and lease of 1ms")
	case o.LossRate < 0 || o.LossRate > 1:
		return fmt.Errorf("sim: loss rate %v is not a probability", o.LossRate)
	}
	for _, k := range o.Faults {
		if !slices.Contains(allFaults, k) {
			return fmt.Errorf("sim: unknown fault %q", k)
		}
	}
	return nil
}

// masterOptions are the Options each master's network and each engine
// read: the faults, latencies and loss rate, the watchdog.
func (o *RedLockOptions) masterOptions() *Options {
	return &Options{Seed: o.Seed, Faults: o.Faults, Length: o.Length, Watchdog: o.Watchdog, Lease: o.Lease,
		IdleTimeout: 5 * time.Second, Latency: o.Latency, MaxLatency: o.MaxLatency, LossRate: o.LossRate}
}

// process is one simulated process: one engine (client) per master.
// Every fault that hits the process is applied to all its clients at
// once, in one event, so they share its pause, crash and clock.
type process struct {
	id      int
	members []*client // by master
	crashed bool
	at      time.Duration // when it crashed
}

// RedLockHold is one owner's RedLock holding: from the grant, as the owner
// decided it, to the earliest of its release, its validity's end (fixed
// lease) and its learning that a majority is lost.
type RedLockHold struct {
	Process int
	Owner   string
	Name    string
	// Fixed is true for a fixed lease, false in watchdog mode.
	Fixed bool
	// Asked is when the attempt that took it started.
	Asked time.Duration
	From  time.Duration
	To    time.Duration
	// End says how it ended: released, validity, lost, crashed, run-end.
	End string
	// Taken is how many masters granted the attempt.
	Taken int
}

// RedLockFault is a fault of a RedLock run: which master (-1: none) and
// which process (-1: none) it hit.
type RedLockFault struct {
	Fault
	Master  int
	Process int
}

// RedLockResult is what one RedLock run recorded and what its checks
// found.
type RedLockResult struct {
	Seed   int64
	Holds  []RedLockHold
	Faults []RedLockFault
	// Attempts counts the attempts (one per try on every master at once);
	// Ops the owners' acquires and releases.
	Attempts int
	Ops      int
	// Violations are the broken guarantees, excused or not.
	Violations []Violation
	Trace      string
	Lines      []string
	Steps      int
}

// Failed reports the violations no injected fault excuses.
func (r *RedLockResult) Failed() []Violation { return unexcused(r.Violations) }

// RunRedLock runs one RedLock simulation. The same options give the same
// trace, byte for byte.
func RunRedLock(o RedLockOptions) (*RedLockResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	tr := newTrace(o.KeepTrace)
	w := newWorld(o.Seed, tr)
	mo := o.masterOptions()
	masters := make([]*redisSim, o.Masters)
	for m := range masters {
		r, err := newRedisSim(w, mo)
		if err != nil {
			return nil, err
		}
		defer r.close()
		r.setUp = func() error { return nil } // a RedLock needs nothing set up
		masters[m] = r
	}
	rl := &redLockRun{w: w, o: &o, masters: masters}
	var all []*client
	for p := range o.Processes {
		pr := &process{id: p}
		for m, r := range masters {
			cl := &client{id: p*o.Masters + m}
			if err := cl.start(w, r, mo); err != nil {
				return nil, err
			}
			r.clients = append(r.clients, cl)
			pr.members = append(pr.members, cl)
			all = append(all, cl)
		}
		rl.procs = append(rl.procs, pr)
	}
	defer w.shutdown(all)
	for _, pr := range rl.procs {
		rl.startProcess(pr)
	}
	rl.planFaults()
	rl.probe()
	if err := w.run(o.Seed, o.Length); err != nil {
		return nil, err
	}
	for i := range rl.holds {
		if h := &rl.holds[i]; h.To < 0 {
			if pr := rl.procs[h.Process]; pr.crashed {
				h.To, h.End = pr.at, "crashed"
			} else {
				h.To, h.End = o.Length, "run-end"
			}
		}
	}
	res := &RedLockResult{Seed: o.Seed, Holds: rl.holds, Faults: rl.faults(), Attempts: rl.attempts, Ops: rl.ops,
		Trace: tr.sum(), Lines: tr.lines, Steps: w.steps}
	res.Violations = checkRedLock(res, &o, rl.believed)
	return res, nil
}

// RunRedLockSeeds runs n seeds from first on with o (its Seed replaced),
// on as many goroutines as there are CPUs, and returns each seed's result
// and error, in seed order.
func RunRedLockSeeds(o RedLockOptions, first int64, n int) ([]*RedLockResult, []error) {
	return runEach(first, n, func(seed int64) (*RedLockResult, error) {
		oi := o
		oi.Seed = seed
		return RunRedLock(oi)
	})
}

// redLockRun is one RedLock run's state: the masters, the processes and
// what the owners recorded.
type redLockRun struct {
	w        *world
	o        *RedLockOptions
	masters  []*redisSim
	procs    []*process
	owners   []*rlOwner
	holds    []RedLockHold
	attempts int
	ops      int
	// pfaults are the faults that hit a process as a whole.
	pfaults []RedLockFault
	// believed are the moments an owner believed it held a RedLock whose
	// majority was gone at Redis (see probe).
	believed []believed
}

// believed is an owner found holding a RedLock a majority of whose
// masters no longer held it for it.
type believed struct {
	hold  int           // the owner's RedLockHold
	since time.Duration // since when fewer than a majority held it
	at    time.Duration // when the owner still believed it held
}

// startProcess spawns, in each of pr's engines, the member actor that
// hands the process's owners that engine's replies.
func (rl *redLockRun) startProcess(pr *process) {
	ps := &rlProcess{run: rl, pr: pr, pids: make([]*actor.PID, len(pr.members))}
	for j := range rl.o.Owners {
		ow := &rlOwner{proc: ps, id: fmt.Sprintf("p%d-o%d", pr.id, j), index: j, hold: -1}
		ps.owners = append(ps.owners, ow)
		rl.owners = append(rl.owners, ow)
	}
	for m, cl := range pr.members {
		mb := &rlMember{ps: ps, master: m}
		pid := cl.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return mb },
			actor.WithDispatcher(cl.workers)))
		ps.pids[m] = pid
		cl.workload = pid
	}
}

// faults lists every fault of the run: the masters' (restarts, losses,
// latency, partitions noted by the master) and the processes'.
func (rl *redLockRun) faults() []RedLockFault {
	out := slices.Clone(rl.pfaults)
	for m, r := range rl.masters {
		for _, f := range r.faults {
			p := -1
			if f.Client >= 0 {
				p = f.Client / rl.o.Masters
			}
			out = append(out, RedLockFault{Fault: f, Master: m, Process: p})
		}
	}
	slices.SortStableFunc(out, func(a, b RedLockFault) int { return cmp.Compare(a.From, b.From) })
	return out
}

// noteProcess records a fault that hit process p (and master m, for a
// partition).
func (rl *redLockRun) noteProcess(f Fault, p, m int) {
	rl.pfaults = append(rl.pfaults, RedLockFault{Fault: f, Master: m, Process: p})
	rl.w.tr.add(rl.w.now, "fault %s p%d m%d %v..%v %s", f.Kind, p, m, f.From, f.To, f.Detail)
}

// planFaults draws the run's faults from the seed and schedules them, as
// planFaults does for one master: a restart with data loss of one master,
// partitions of one process from one master, a pause, a clock jump and a
// crash of one process. Losses and latency are drawn per message by each
// master's network.
func (rl *redLockRun) planFaults() {
	w, o := rl.w, rl.o
	has := func(k FaultKind) bool { return slices.Contains(o.Faults, k) }
	pick := func() *process { return rl.procs[w.rng.IntN(len(rl.procs))] }
	when := func() time.Duration { return w.jitter(o.Length/10, o.Length*7/10) }
	longest := max(o.Watchdog, o.Lease)
	if has(FaultPartition) {
		pr, m, from := pick(), w.rng.IntN(o.Masters), when()
		for range 1 + w.rng.IntN(2) {
			to := from + w.jitter(o.Watchdog/2, 2*o.Watchdog)
			cl := pr.members[m]
			w.at(from, nil, func() {
				rl.noteProcess(Fault{Kind: FaultPartition, Client: cl.id, From: w.now, To: to}, pr.id, m)
				cl.partitioned = true
				cl.ps.broken(errReset)
			})
			w.at(to, nil, func() { cl.partitioned = false })
			pr, m, from = pick(), w.rng.IntN(o.Masters), to+w.jitter(0, o.Watchdog)
		}
	}
	if has(FaultPause) {
		pr, from := pick(), when()
		to := from + longest + w.jitter(longest/5, longest)
		w.at(from, nil, func() {
			rl.noteProcess(Fault{Kind: FaultPause, Client: -1, From: w.now, To: to}, pr.id, -1)
			for _, cl := range pr.members {
				cl.pausedUntil = to
			}
		})
	}
	if has(FaultClockJump) {
		pr, at := pick(), when()
		jump := w.jitter(500*time.Millisecond, 2*time.Second)
		if w.chance(0.5) {
			jump = -jump
		}
		w.at(at, nil, func() {
			rl.noteProcess(Fault{Kind: FaultClockJump, Client: -1, From: w.now, To: w.now,
				Detail: fmt.Sprintf("%+v", jump)}, pr.id, -1)
			for _, cl := range pr.members {
				cl.skew += jump
			}
		})
	}
	if has(FaultRestart) {
		m, at := w.rng.IntN(o.Masters), when()
		r := rl.masters[m]
		w.at(at, nil, func() {
			r.note(Fault{Kind: FaultRestart, Client: -1, From: w.now, To: w.now, Detail: fmt.Sprintf("master %d, data lost", m)})
			r.restart()
		})
	}
	if has(FaultCrash) && len(rl.procs) > 1 {
		pr, at := pick(), w.jitter(o.Length/5, o.Length*4/5)
		w.at(at, nil, func() {
			rl.noteProcess(Fault{Kind: FaultCrash, Client: -1, From: w.now, To: w.now}, pr.id, -1)
			pr.crashed, pr.at = true, w.now
			for _, cl := range pr.members {
				cl.crashed, cl.crashedAt = true, w.now
				cl.ps.broken(errReset)
			}
		})
	}
}

// probeEvery is how often the run looks at what the masters hold.
const probeEvery = 50 * time.Millisecond

// probe looks, every probeEvery of simulated time, at every holding an
// owner believes it has: when fewer than a majority of the masters hold
// the lock for the owner, it notes since when, and records each moment the
// owner still believes it holds (the checks decide how late is too late).
func (rl *redLockRun) probe() {
	w := rl.w
	since := map[int]time.Duration{} // by hold
	var tick func()
	tick = func() {
		for _, r := range rl.masters {
			r.syncClock() // expire what has run out
		}
		for _, ow := range rl.owners {
			h := ow.hold
			if h < 0 || rl.holds[h].To >= 0 || rl.procs[rl.holds[h].Process].crashed {
				continue
			}
			held := 0
			for _, r := range rl.masters {
				if r.m.Exists(ow.name) && slices.Contains(hashFields(r, ow.name), ow.id) {
					held++
				}
			}
			if held >= quorum.Quorum(rl.o.Masters) { // the true majority, whatever a broken RedLock uses
				delete(since, h)
				continue
			}
			s, ok := since[h]
			if !ok {
				s, since[h] = w.now, w.now
			}
			rl.believed = append(rl.believed, believed{hold: h, since: s, at: w.now})
		}
		if w.now+probeEvery <= rl.o.Length {
			w.after(probeEvery, nil, tick)
		}
	}
	w.after(probeEvery, nil, tick)
}

// hashFields reads the fields of the lock hash name at master r, nil when
// it is not a hash.
func hashFields(r *redisSim, name string) []string {
	fields, err := r.m.HKeys(name)
	if err != nil {
		return nil
	}
	return fields
}
