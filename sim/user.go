package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/fence"
	"github.com/warden-go/warden/messages"
)

// Workload is a user's own code to simulate: the actors each simulated
// process runs, and the invariants to check over what they recorded. Set
// it as Options.Workload.
//
// Each process is a whole warden engine with its own actor system, clock
// and Redis connection, as in Run. Process.Engine is its engine's PID:
// the actors talk to it by the messages protocol, exactly as in an actor
// application (ctx.Request(p.Engine(), &messages.Acquire{...})). Their
// mailboxes run on the simulation's scheduler, one step at a time in the
// order the seed draws, with the engines' actors and Redis; their timers
// run on the simulated clock (Process.SendAfter, Process.Clock). They
// share the resources the simulation provides: a key-value store that can
// check fencing tokens (Process.KV), a log that stamps every append with
// the simulated time (Process.Log), and the simulated Redis itself,
// through the process's own connection (Process.Redis: a fenced write
// with package fence runs there the script it runs on a real Redis).
// Process.Record records an event in the run's history, which Check
// reads and the timeline draws on the process's rows. Give every owner a name of its own across the
// processes (with Process.ID, say): warden's checks take one name for one
// owner.
//
// The faults of Options.Faults hit the user's processes as they hit the
// built-in workload's: a pause freezes every actor of the process (its
// timers fire when it ends), a crash stops them for good.
//
// A user actor must not block: a step that sleeps on the wall clock or
// waits on a channel, a future or a goroutine outside the simulation for
// longer than StepTimeout ends the run with a StepError (ErrBlocked) that
// names the actor and the step; a panic ends the run with a StepError
// (ErrPanicked) carrying the stack. Either ends only that seed's run. An
// actor's children must be spawned with Process.Props (other props run
// outside the simulation). Once the run is over, the actors receive no
// more messages.
type Workload struct {
	// Actors returns the producers of the actors process p runs, spawned
	// in that order when the run begins. Required.
	Actors func(p *Process) []actor.Producer
	// Check returns the violations of the user's invariants in the run's
	// history (h.Events, h.Log and the lock operations the actors sent);
	// each one whose Excused is empty fails the run (Result.Failed).
	// Warden's own checks run as well, over the lock operations (of the
	// lock kinds, messages.Kind.Held) the actors sent to their engines.
	// Nil checks nothing more.
	Check func(h *History) []Violation
	// Builtin runs the built-in workload's owners (Options.Owners per
	// process) next to the user's actors. The default is the user's
	// actors alone.
	Builtin bool
	// StepTimeout is how long of wall time one scheduler step may take
	// before the run ends with ErrBlocked; the blocked goroutine is left
	// to return on its own. The default is 10s.
	StepTimeout time.Duration
}

// Event is one thing a user actor recorded with Process.Record.
type Event struct {
	// At (simulated time) and Process are filled in by Record.
	At      time.Duration
	Process int
	// Owner names the timeline row the event is drawn on (with the
	// process): the lock owner or the actor it is about.
	Owner string
	// What happened, to which Key, with what Value and fencing Token: the
	// user's to choose.
	What  string
	Key   string
	Value string
	Token int64
}

// LogEntry is one append to the simulated log.
type LogEntry struct {
	At      time.Duration
	Process int
	Entry   string
}

// Process is one simulated process as its user actors see it. Its methods
// are to be called from the actors' Receive (or a timer callback of its
// Clock), never from a goroutine of their own.
type Process struct {
	u     *userRun
	cl    *client
	rng   *rand.Rand
	clock *userClock
	kv    *KV
	log   *Log
	pids  []*actor.PID
	// pending are the lock requests awaiting an answer, by request ID;
	// locks what each owner holds, as the engine's answers tell.
	pending map[string]userPending
	locks   map[userLockKey]*userLock
}

// ID is the process's number, from 0.
func (p *Process) ID() int { return p.cl.id }

// Seed is the run's seed.
func (p *Process) Seed() int64 { return p.u.o.Seed }

// Engine is the PID of the process's warden engine: send it the messages
// protocol's requests.
func (p *Process) Engine() *actor.PID { return p.cl.root }

// System is the process's actor system (to Send from a timer callback).
func (p *Process) System() *actor.ActorSystem { return p.cl.sys }

// Clock is the process's clock: the simulated time, plus the process's
// skew after a clock jump. Its AfterFunc runs the callback as a scheduler
// step of the process; After, Sleep, NewTimer and NewTicker are not
// supported (they panic).
func (p *Process) Clock() clockwork.Clock { return p.clock }

// Now is the process's clock's time.
func (p *Process) Now() time.Time { return p.clock.Now() }

// SendAfter sends msg to the actor to after d of simulated time; Stop the
// timer to cancel it.
func (p *Process) SendAfter(d time.Duration, to *actor.PID, msg any) clockwork.Timer {
	sys := p.cl.sys
	return p.clock.clientClock.AfterFunc(d, func() { sys.Root.Send(to, msg) })
}

// Rand is the process's random source, drawn from the seed: the same seed
// gives the same draws.
func (p *Process) Rand() *rand.Rand { return p.rng }

// KV is the simulated key-value store, shared by every process.
func (p *Process) KV() *KV { return p.kv }

// Redis is the process's connection to the simulated Redis, the one its
// engine talks to: a user actor keeps its own keys there as a real
// process does (its fenced writes through package fence's Redis guard,
// say). Every call crosses the simulated network: the actor's step waits
// for the reply in simulated time (a pause of the process holds the
// reply back), and the run's network faults hit it. Call it from the
// actor's Receive only.
func (p *Process) Redis() *redis.Client { return p.cl.rdb }

// Log is the simulated log, shared by every process.
func (p *Process) Log() *Log { return p.log }

// Record records e in the run's history (History.Events) at the simulated
// time now, as this process's.
func (p *Process) Record(e Event) {
	u := p.u
	e.At, e.Process = u.w.now, p.cl.id
	u.events = append(u.events, e)
	u.w.tr.add(u.w.now, "c%d event %s %s key=%s value=%s token=%d", p.cl.id, e.Owner, e.What, e.Key, e.Value, e.Token)
}

// Props returns the props of an actor scheduled by the simulation in this
// process: spawn a user actor's children with them.
func (p *Process) Props(producer actor.Producer) *actor.Props {
	return actor.PropsFromProducer(producer, actor.WithDispatcher(p.cl.workers),
		actor.WithReceiverMiddleware(p.receive), actor.WithSenderMiddleware(p.send))
}

// KV is the simulated key-value store the user actors share. Its calls
// take effect at once, at the simulated time of the step that makes them.
// Each key has a fence: the highest fencing token a fenced call on it
// carried; a fenced call with a lower token is refused (ErrStaleToken).
type KV struct {
	u    *userRun
	proc int
}

type kvStore struct {
	data   map[string]string
	fences map[string]int64
}

// Get returns key's value and whether it is set.
func (kv *KV) Get(key string) (string, bool) {
	v, ok := kv.u.kv.data[key]
	kv.u.w.tr.add(kv.u.w.now, "c%d kv get %s = %q %t", kv.proc, key, v, ok)
	return v, ok
}

// Put sets key to value, whatever its fence.
func (kv *KV) Put(key, value string) {
	kv.u.kv.data[key] = value
	kv.u.w.tr.add(kv.u.w.now, "c%d kv put %s = %q", kv.proc, key, value)
}

// GetFenced returns key's value, as Get, if token is not below the key's
// fence, and raises the fence to token: a holder that read with its token
// makes every older holder's later fenced call fail.
func (kv *KV) GetFenced(key string, token int64) (string, bool, error) {
	if err := kv.fence(key, token); err != nil {
		return "", false, err
	}
	v, ok := kv.Get(key)
	return v, ok, nil
}

// PutFenced sets key to value, as Put, if token is not below the key's
// fence, and raises the fence to token; else it changes nothing and
// returns ErrStaleToken.
func (kv *KV) PutFenced(key, value string, token int64) error {
	if err := kv.fence(key, token); err != nil {
		return err
	}
	kv.Put(key, value)
	return nil
}

// fence is the KV's guard: package fence's decision (fence.Admit), the
// one its Redis and SQL guards make in the store. A refusal matches
// fence.ErrStaleToken too.
func (kv *KV) fence(key string, token int64) error {
	s := kv.u.kv
	f := s.fences[key]
	if err := fence.Admit(key, token, f); err != nil {
		kv.u.w.tr.add(kv.u.w.now, "c%d kv fence %s token=%d refused (fence %d)", kv.proc, key, token, f)
		return fmt.Errorf("%w: %w", ErrStaleToken, err)
	}
	s.fences[key] = token
	return nil
}

// Log is the simulated append-only log the user actors share: every
// append is kept (History.Log) with the simulated time and the process.
type Log struct {
	u    *userRun
	proc int
}

// Append appends entry to the log.
func (l *Log) Append(entry string) {
	u := l.u
	u.log = append(u.log, LogEntry{At: u.w.now, Process: l.proc, Entry: entry})
	u.w.tr.add(u.w.now, "c%d log %s", l.proc, entry)
}

// userRun is a run's user workload: its processes, resources and what
// they recorded.
type userRun struct {
	w      *world
	o      *Options
	wl     *Workload
	rec    *recorder
	kv     kvStore
	events []Event
	log    []LogEntry
	procs  []*Process
	// step is the user actor's step running now, for a blocked step's
	// report (read by the driver after its wait timed out).
	step atomic.Pointer[userStep]
}

type userStep struct {
	proc    int
	actor   string
	message string
}

func newUserRun(w *world, o *Options, rec *recorder) *userRun {
	u := &userRun{w: w, o: o, wl: o.Workload, rec: rec,
		kv: kvStore{data: map[string]string{}, fences: map[string]int64{}}}
	w.stepTimeout = cmp.Or(o.Workload.StepTimeout, 10*time.Second)
	w.blocked = u.blocked
	return u
}

// start spawns cl's user actors. A panic of Actors (or of an actor's
// constructor) is the run's StepError.
func (u *userRun) start(cl *client) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &StepError{Seed: u.o.Seed, Step: u.w.steps, At: u.w.now, Process: cl.id, Message: "Workload.Actors",
				Panic: r, Stack: string(debug.Stack()), kind: ErrPanicked}
		}
	}()
	p := &Process{u: u, cl: cl, rng: rand.New(rand.NewPCG(uint64(u.o.Seed), uint64(cl.id)+1)),
		kv: &KV{u: u, proc: cl.id}, log: &Log{u: u, proc: cl.id},
		pending: map[string]userPending{}, locks: map[userLockKey]*userLock{}}
	p.clock = &userClock{clientClock: clientClock{w: u.w, cl: cl}, p: p}
	cl.user = p
	u.procs = append(u.procs, p)
	for i, producer := range u.wl.Actors(p) {
		if producer == nil {
			return fmt.Errorf("sim: process %d: Workload.Actors returned a nil producer (actor %d)", cl.id, i)
		}
		pid, err := cl.sys.Root.SpawnNamed(p.Props(producer), fmt.Sprintf("user-%d", i))
		if err != nil {
			return fmt.Errorf("sim: process %d: spawn user actor %d: %w", cl.id, i, err)
		}
		p.pids = append(p.pids, pid)
	}
	return nil
}

// blocked is the error of a step that did not return in time.
func (u *userRun) blocked() error {
	e := &StepError{Seed: u.o.Seed, Step: u.w.steps, At: u.w.now, Process: -1, Message: "(an engine step)",
		kind: ErrBlocked}
	if s := u.step.Load(); s != nil {
		e.Process, e.Actor, e.Message = s.proc, s.actor, s.message
	}
	return e
}

// guard runs fn as step what of process p's actor, turning a panic into
// the run's StepError.
func (u *userRun) guard(p *Process, actorID, what string, fn func()) {
	u.step.Store(&userStep{proc: p.cl.id, actor: actorID, message: what})
	defer func() {
		u.step.Store(nil)
		if r := recover(); r != nil {
			u.w.fail(&StepError{Seed: u.o.Seed, Step: u.w.steps, At: u.w.now, Process: p.cl.id, Actor: actorID,
				Message: what, Panic: r, Stack: string(debug.Stack()), kind: ErrPanicked})
		}
	}()
	fn()
}

// receive is the user actors' receiver middleware: it records the
// engine's answers for warden's checks and guards the actor's step.
func (p *Process) receive(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		u := p.u
		if u.w.teardown.Load() || u.w.err.Load() != nil {
			if _, ok := env.Message.(*actor.PoisonPill); ok {
				next(c, env) // the engine stopping it: the actor is not called
			}
			return // the run is over: the actor receives nothing more
		}
		p.answered(env.Message)
		u.guard(p, c.Self().Id, fmt.Sprintf("%T", env.Message), func() { next(c, env) })
	}
}

// send is the user actors' sender middleware: it records the lock
// requests sent to the process's engine for warden's checks.
func (p *Process) send(next actor.SenderFunc) actor.SenderFunc {
	return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		if !p.u.w.teardown.Load() && target.Equal(p.cl.root) {
			p.asked(env.Message)
		}
		next(c, target, env)
	}
}

// userClock is a process's clock as its user actors see it: AfterFunc
// runs its callback as a guarded step of the process.
type userClock struct {
	clientClock
	p *Process
}

func (c *userClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	p, w := c.p, c.w
	return c.clientClock.AfterFunc(d, func() {
		w.schedule(p.cl, func() {
			if !w.teardown.Load() && w.err.Load() == nil {
				p.u.guard(p, "", "a Clock().AfterFunc callback", f)
			}
		})
	})
}

// userLock is what one owner holds of one lock, as its messages tell.
type userLock struct {
	hold  int // index in the history's holds, -1 when none
	count int
	lease time.Duration
}

type userLockKey struct {
	owner, name string
	kind        messages.Kind
}

// userPending is a lock request of a user actor awaiting its answer.
type userPending struct {
	op    int
	lease time.Duration
}

// asked records a lock request of a user actor to its engine.
func (p *Process) asked(msg any) {
	rec := p.u.rec
	switch m := msg.(type) {
	case *messages.Acquire:
		if !m.Kind.Held() {
			return
		}
		act := ActAcquire
		if !m.Deadline.IsZero() && !m.Deadline.After(p.clock.Now()) {
			act = ActTry
		}
		i := rec.op(Op{Client: p.cl.id, Owner: m.Owner, Name: m.Name, Kind: m.Kind, Action: act, Permits: 1,
			Lease: m.Lease})
		p.pending[m.RequestID] = userPending{op: i, lease: m.Lease}
	case *messages.Release:
		if !m.Kind.Held() {
			return
		}
		i := rec.op(Op{Client: p.cl.id, Owner: m.Owner, Name: m.Name, Kind: m.Kind, Action: ActRelease, Permits: 1})
		p.pending[m.RequestID] = userPending{op: i}
		if l := p.locks[userLockKey{m.Owner, m.Name, m.Kind}]; l != nil && l.count > 0 {
			l.count--
			if l.count == 0 && l.hold >= 0 {
				p.endHold(l, EndReleased)
			}
		}
	}
}

// answered records an engine's answer to a user actor's lock request.
func (p *Process) answered(msg any) {
	rec, w := p.u.rec, p.u.w
	pending := p.pending
	take := func(reqID string) (userPending, bool) {
		q, ok := pending[reqID]
		delete(pending, reqID)
		return q, ok
	}
	switch m := msg.(type) {
	case *messages.Acquired:
		q, ok := take(m.RequestID)
		if !ok || !m.Kind.Held() {
			return
		}
		rec.answer(q.op, true, false, m.Token)
		k := userLockKey{m.Owner, m.Name, m.Kind}
		l := p.locks[k]
		if l == nil {
			l = &userLock{hold: -1}
			p.locks[k] = l
		}
		l.count++
		l.lease = q.lease
		if l.hold < 0 {
			// A fixed lease bounds the hold as a permit's lease does: its
			// owner must count it as ended a lease after it asked, told or
			// not.
			rec.holds = append(rec.holds, Hold{Client: p.cl.id, Owner: m.Owner, Name: m.Name, Kind: m.Kind, Permits: 1,
				Asked: rec.ops[q.op].Call, From: w.now, To: -1, Token: m.Token, Lease: q.lease})
			l.hold = len(rec.holds) - 1
		}
	case *messages.AcquireFailed:
		q, ok := take(m.RequestID)
		if !ok || !m.Kind.Held() {
			return
		}
		rec.answer(q.op, false, isFault(m.Err), 0)
		if isFault(m.Err) {
			p.ghost(m.Owner, m.Name, m.Kind, q.lease, q.op)
		}
	case *messages.Released:
		if q, ok := take(m.RequestID); ok && m.Kind.Held() {
			rec.answer(q.op, true, false, 0)
		}
	case *messages.ReleaseFailed:
		q, ok := take(m.RequestID)
		if !ok || !m.Kind.Held() {
			return
		}
		rec.answer(q.op, false, isFault(m.Err), 0)
		if isFault(m.Err) {
			lease := time.Duration(0)
			if l := p.locks[userLockKey{m.Owner, m.Name, m.Kind}]; l != nil {
				lease = l.lease
			}
			p.ghost(m.Owner, m.Name, m.Kind, lease, q.op)
		}
	case *messages.LockLost:
		if l := p.locks[userLockKey{m.Owner, m.Name, m.Kind}]; l != nil && l.hold >= 0 {
			l.count = 0
			p.endHold(l, EndLost)
		}
	}
}

// endHold ends l's hold now, how end says.
func (p *Process) endHold(l *userLock, end HoldEnd) {
	rec, w := p.u.rec, p.u.w
	h := &rec.holds[l.hold]
	h.end(w.now, end)
	l.hold = -1
	w.tr.add(w.now, "c%d %s hold %s %s %s", p.cl.id, h.Owner, h.Name, h.Kind, h.End)
}

// ghost records that Redis may hold owner's lock until a lease after the
// operation at index op, whose outcome is unknown.
func (p *Process) ghost(owner, name string, kind messages.Kind, lease time.Duration, op int) {
	rec, w, o := p.u.rec, p.u.w, p.u.o
	to := w.now + o.Watchdog
	if lease > 0 {
		to = w.now + lease
	}
	from := rec.ops[op].Call
	rec.holds = append(rec.holds, Hold{Client: p.cl.id, Owner: owner, Name: name, Kind: kind, Permits: 1,
		Asked: from, From: from, To: to, End: EndUnknown})
}

// check runs the user's invariants over h, a panic turned into a
// StepError.
func (u *userRun) check(h *History) (vs []Violation, err error) {
	if u.wl.Check == nil {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = &StepError{Seed: u.o.Seed, Step: u.w.steps, At: u.w.now, Process: -1, Message: "Workload.Check",
				Panic: r, Stack: string(debug.Stack()), kind: ErrPanicked}
		}
	}()
	return u.wl.Check(h), nil
}

// stop stops p's user actors once the run is over; it waits for them
// unless a step of the run was abandoned (blocked).
func (p *Process) stop() {
	for _, pid := range p.pids {
		if p.u.w.abandoned {
			p.cl.sys.Root.Stop(pid)
		} else {
			_ = p.cl.sys.Root.PoisonFuture(pid).Wait()
		}
	}
}
