package sim

import (
	"fmt"
	"time"

	"github.com/warden-go/warden/messages"
)

// Action is what one operation of a history asked the engine to do.
type Action string

const (
	// ActAcquire waits for the lock (or permits) up to its wait.
	ActAcquire Action = "acquire"
	// ActTry tries once and never waits.
	ActTry Action = "try"
	// ActRelease releases one hold (or the permits taken; a permit of a
	// permit-expirable semaphore by its ID).
	ActRelease Action = "release"
	// ActCountDown counts a count-down latch down by one; Token is the
	// count it answered (after the count-down, never below 0).
	ActCountDown Action = "count down"
	// ActSetCount sets a count-down latch's count (Permits) if it does not
	// exist (TrySetCount). The simulation does it itself, as Client -1,
	// when the run begins and after a Redis restart.
	ActSetCount Action = "set count"
)

// Op is one operation of a simulated worker, from the moment it sent its
// request (Call) to the moment it had the engine's answer (Return), on the
// simulation's clock (time since the run began). An operation that never
// returned (its client crashed, or the run ended) has Return < 0.
type Op struct {
	Client int
	Owner  string
	Name   string
	Kind   messages.Kind
	Action Action
	// Permits is a semaphore operation's permit count (1 for a lock), a
	// set count's count.
	Permits int64
	// Lease is an acquire's explicit lease (0: watchdog mode, or none).
	Lease  time.Duration
	Call   time.Duration
	Return time.Duration
	// OK: an acquire or try that was granted, a release that succeeded.
	OK bool
	// Token is a fenced acquire's token, a count-down's answered count.
	Token int64
	// Err marks an operation answered with an error (Redis unreachable, a
	// lost reply): its outcome is unknown, like one that never returned.
	Err bool
	// Values are a group lock operation's values (its holds are on
	// GroupValueName(Name, value), one per value).
	Values []string
}

// MultiOp is one MultiLock acquire of a simulated worker (package
// internal/multi decides, as for client.MultiLock): from the moment it
// asked for its first member (Call) to its answer (Return: the set held,
// or not, once the members taken were given back and those give-backs
// answered). Each member's acquires and releases are ordinary Ops on its
// name, each member hold an ordinary Hold. Times are the simulation's,
// -1 for what never came.
type MultiOp struct {
	Client int
	Owner  string
	// Members are the member locks in the order the worker listed them;
	// the acquire takes them in the canonical order (by name).
	Members []MultiMember
	// Lease is every member's lease (0: watchdog mode). Blocking is a Lock
	// or LockLease (no deadline); otherwise Wait is a TryLockWait's wait.
	Lease    time.Duration
	Blocking bool
	Wait     time.Duration
	Call     time.Duration
	Return   time.Duration
	// OK: the set was taken; Err: a member was answered with an error,
	// which ended the acquire (the members taken were given back).
	OK  bool
	Err bool
	// Attempts is how many passes over the members the acquire made.
	Attempts int
	// Until is when the worker began releasing a set it took, Done when
	// every member's release was answered (-1 when that never came).
	Until time.Duration
	Done  time.Duration
}

// MultiMember is one member of a MultiLock.
type MultiMember struct {
	Name string
	Kind messages.Kind
}

// HoldEnd tells how a hold ended.
type HoldEnd string

const (
	// EndReleased: the owner sent its release.
	EndReleased HoldEnd = "released"
	// EndLost: the engine told the owner the lock was lost.
	EndLost HoldEnd = "lost"
	// EndExpired: a permit's lease ended before its owner sent the
	// release. Nobody tells the owner: it counts its permit as gone at the
	// lease's end, measured from when it sent the acquire.
	EndExpired HoldEnd = "expired"
	// EndCrashed: the owner's client crashed while holding.
	EndCrashed HoldEnd = "crashed"
	// EndRunEnd: still held when the run ended.
	EndRunEnd HoldEnd = "run end"
	// EndUnknown is not a hold the owner believed in but one Redis may
	// have kept: an acquire or release answered with an error may have left
	// the lock held, at most until its lease ran out (To).
	EndUnknown HoldEnd = "unknown"
)

// Hold is one interval during which an owner believed it held a lock or
// permits: from the engine's answer granting it to the moment the owner
// sent its release, was told of the loss, crashed or the run ended.
type Hold struct {
	Client  int
	Owner   string
	Name    string
	Kind    messages.Kind
	Permits int64
	// Asked is when the acquire that began the hold was sent; Redis
	// granted it somewhere in [Asked, From].
	Asked time.Duration
	From  time.Duration
	To    time.Duration
	End   HoldEnd
	Token int64
	// Lease is a permit's lease (0: it never expires); the built-in
	// workload's locks leave it 0, a user workload's fixed-lease locks
	// set it. Its owner holds the permit (or lock) until leaseEnd at the
	// latest.
	Lease time.Duration
}

// redisGrain is Redis's clock grain (1 ms), by which an owner counts a
// lease as ending early. permitGrain is how much earlier than Asked+Lease
// a permit's lease may end: the acquire's script takes its client's time
// in whole milliseconds (truncated), and the lease ends that many
// milliseconds later.
const (
	redisGrain  = time.Millisecond
	permitGrain = redisGrain
)

// leaseEnd is when a permit's lease ends at the earliest, as its owner
// must count it: from when it sent the acquire (the script ran later, with
// a later time, unless a clock jumped). -1 for a hold without a lease.
func (h *Hold) leaseEnd() time.Duration {
	if h.Lease <= 0 {
		return -1
	}
	return h.Asked + h.Lease - permitGrain
}

// end ends h at at, how end says, or at its lease's end if that came first
// (EndExpired). A hold whose lease ended before it began (its grant came
// back late) ends where it began: it is empty.
func (h *Hold) end(at time.Duration, end HoldEnd) {
	if le := h.leaseEnd(); le >= 0 && at > le {
		at, end = max(le, h.From), EndExpired
	}
	h.To, h.End = at, end
}

// FaultKind names an injected fault.
type FaultKind string

const (
	FaultLatency     FaultKind = "latency"      // every message of the run is delayed (and so reordered)
	FaultLostReply   FaultKind = "lost-reply"   // Redis ran a command, its reply never came
	FaultLostRequest FaultKind = "lost-request" // a command never reached Redis
	FaultLostMessage FaultKind = "lost-message" // a pub/sub message never reached one client
	FaultPartition   FaultKind = "partition"    // one client cut off from Redis for a while
	FaultCrash       FaultKind = "crash"        // one client stopped for good
	FaultPause       FaultKind = "pause"        // one client frozen (a GC pause) longer than the lease
	FaultRestart     FaultKind = "restart"      // Redis restarted and lost its data
	FaultClockJump   FaultKind = "clock-jump"   // one client's clock jumped
)

// Fault is one injected fault: when it began and ended on the simulation's
// clock (From == To for an instant one), and which client it hit (-1 for
// Redis itself).
type Fault struct {
	Kind   FaultKind
	Client int
	From   time.Duration
	To     time.Duration
	// Detail says more: a jump's size, the command whose reply was lost.
	Detail string
}

// Violation is a guarantee a run broke.
type Violation struct {
	// Check names the checker: "mutual exclusion", "fencing",
	// "starvation", "told before", "linearizability", "permits", "latch",
	// "all or none", "multilock progress".
	Check string
	At    time.Duration
	Name  string
	// What describes it for a person.
	What string
	// Excused names the fault that explains it when the guarantee is one
	// that fault is documented to break (see Limits); empty otherwise.
	Excused FaultKind
}

// String renders v on one line: when, which check on which name, what,
// and the fault that excuses it (or NOT EXCUSED).
func (v Violation) String() string {
	excuse := "NOT EXCUSED"
	if v.Excused != "" {
		excuse = "excused by " + string(v.Excused)
	}
	return fmt.Sprintf("%v %s on %s: %s [%s]", v.At, v.Check, v.Name, v.What, excuse)
}

// History is everything a run recorded, what the checkers read and the
// timeline draws.
type History struct {
	Seed    int64
	Clients int
	Length  time.Duration
	// Trip is the longest a request of the run takes to reach Redis. An
	// owner is told its lease ended counting from when it sent the
	// acquire, a Redis clock grain (1 ms) early: Redis may keep the lock
	// up to Trip plus that grain after the owner was told.
	Trip   time.Duration
	Ops    []Op
	Holds  []Hold
	Faults []Fault
	// Multis are the MultiLock acquires; their members' operations and
	// holds are among Ops and Holds.
	Multis []MultiOp
	// Events are what a user workload's actors recorded (Process.Record),
	// Log what they appended to the simulated log, both in time order.
	Events []Event
	Log    []LogEntry
}
