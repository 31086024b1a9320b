package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// countingOptions are the options the hand-made histories are checked
// with: 2 permits, a 3 s watchdog (latchBound 1.5 s).
func countingOptions(t *testing.T) *Options {
	t.Helper()
	o := &Options{}
	require.NoError(t, o.defaults())
	return o
}

// permitHold is a permit held by owner on "p" from..to (asked 5 ms before
// from), ended how end says, with lease.
func permitHold(owner string, from, to time.Duration, end HoldEnd, lease time.Duration) Hold {
	return Hold{Owner: owner, Name: "p", Kind: messages.KindPermitSemaphore, Permits: 1, Asked: from - ms(5), From: from,
		To: to, End: end, Lease: lease}
}

// failedChecks runs every checker over h and returns the checks of the
// violations no fault excuses.
func failedChecks(t *testing.T, h *History) []string {
	t.Helper()
	vs, unknown := check(h, countingOptions(t))
	require.Empty(t, unknown)
	var out []string
	for _, v := range vs {
		if v.Excused == "" {
			out = append(out, v.Check)
			t.Logf("%s at %v on %s: %s", v.Check, v.At, v.Name, v.What)
		}
	}
	return out
}

func TestPermitCheckCountsHolders(t *testing.T) {
	h := &History{Length: ms(5000), Holds: []Hold{
		permitHold("a", ms(100), ms(900), EndReleased, ms(2000)),
		permitHold("b", ms(200), ms(800), EndReleased, 0),
		permitHold("c", ms(300), ms(400), EndReleased, ms(2000)), // a third holder: one too many
	}}
	assert.Equal(t, []string{checkPermitCount}, failedChecks(t, h))

	// A restart before gives every permit back while their owners hold them.
	h.Faults = []Fault{{Kind: FaultRestart, Client: -1, From: ms(150), To: ms(150)}}
	assert.Empty(t, failedChecks(t, h))
	h.Faults = []Fault{{Kind: FaultRestart, Client: -1, From: ms(450), To: ms(450)}} // after: no excuse
	assert.Equal(t, []string{checkPermitCount}, failedChecks(t, h))
	// A lost reply breaks no permit's count.
	h.Faults = []Fault{{Kind: FaultLostReply, Client: 0, From: ms(250), To: ms(250)}}
	assert.Equal(t, []string{checkPermitCount}, failedChecks(t, h))
}

func TestPermitCheckEndsHoldsAtTheirLease(t *testing.T) {
	// a's permit (lease 300 ms, asked at 95 ms) ends at 394 ms, before c
	// took it at 400 ms, although a released it only at 900 ms.
	a := permitHold("a", ms(100), -1, "", ms(300))
	a.end(ms(900), EndReleased)
	require.Equal(t, EndExpired, a.End)
	require.Equal(t, ms(394), a.To)
	h := &History{Length: ms(5000), Holds: []Hold{a,
		permitHold("b", ms(200), ms(800), EndReleased, 0),
		permitHold("c", ms(400), ms(700), EndReleased, ms(2000)),
	}}
	assert.Empty(t, failedChecks(t, h))

	// A grant that came back after its lease ended is an empty hold.
	late := permitHold("d", ms(100), -1, "", ms(3))
	late.end(ms(200), EndReleased)
	assert.Equal(t, EndExpired, late.End)
	assert.Equal(t, late.From, late.To)
}

func TestPermitCheckFindsAPermitGoneEarly(t *testing.T) {
	rel := Op{Owner: "a", Name: "p", Kind: messages.KindPermitSemaphore, Action: ActRelease, Permits: 1,
		Call: ms(500), Return: ms(510)}
	h := &History{Length: ms(5000), Holds: []Hold{permitHold("a", ms(100), ms(500), EndReleased, ms(2000))},
		Ops: []Op{rel}}
	assert.Equal(t, []string{checkPermitCount}, failedChecks(t, h), "refused while its lease ran")

	h.Ops[0].OK = true
	assert.Empty(t, failedChecks(t, h))
	h.Ops[0].OK, h.Ops[0].Err = false, true // a lost reply: unknown
	assert.Empty(t, failedChecks(t, h))

	// Released after the lease ended: refused rightly.
	h.Holds[0] = permitHold("a", ms(100), -1, "", ms(300))
	h.Holds[0].end(ms(500), EndReleased)
	h.Ops[0].Err = false
	assert.Empty(t, failedChecks(t, h))

	// A permit that never expires must be released.
	h.Holds[0] = permitHold("a", ms(100), ms(500), EndReleased, 0)
	assert.Equal(t, []string{checkPermitCount}, failedChecks(t, h))
	h.Faults = []Fault{{Kind: FaultClockJump, Client: 1, From: ms(50), To: ms(50), Detail: "+2s"}}
	assert.Empty(t, failedChecks(t, h), "a clock jump reclaims permits early")
}

// latchOps is a latch "l" set to count at 0, with ops after.
func latchOps(count int64, ops ...Op) []Op {
	out := []Op{{Client: -1, Name: "l", Kind: messages.KindCountDownLatch, Action: ActSetCount, Permits: count, OK: true}}
	for _, op := range ops {
		op.Name, op.Kind = "l", messages.KindCountDownLatch
		out = append(out, op)
	}
	return out
}

func countDown(client int, call, ret time.Duration, count int64) Op {
	return Op{Client: client, Owner: "d", Action: ActCountDown, Permits: 1, Call: call, Return: ret, OK: true, Token: count}
}

func await(client int, act Action, call, ret time.Duration, ok bool) Op {
	return Op{Client: client, Owner: "w", Action: act, Call: call, Return: ret, OK: ok}
}

func TestLatchCheckNeedsTheCountDowns(t *testing.T) {
	h := &History{Length: ms(5000), Ops: latchOps(2,
		countDown(0, ms(100), ms(110), 1),
		await(1, ActAcquire, ms(50), ms(300), true), // one count-down of two
		countDown(0, ms(400), ms(410), 0),
	)}
	assert.Equal(t, []string{checkLatch}, failedChecks(t, h))

	h.Ops[3].Call = ms(250) // the second one was sent before the answer
	assert.Empty(t, failedChecks(t, h))

	// One answered with an error may have run: it counts.
	h.Ops[3].Call, h.Ops[3].OK, h.Ops[3].Err = ms(250), false, true
	assert.Empty(t, failedChecks(t, h))

	// A restart loses the count: excused.
	h.Ops[3].Call, h.Ops[3].OK, h.Ops[3].Err = ms(400), true, false
	h.Faults = []Fault{{Kind: FaultRestart, Client: -1, From: ms(200), To: ms(200)}}
	assert.Empty(t, failedChecks(t, h))
}

func TestLatchCheckFindsNotYetAfterZero(t *testing.T) {
	h := &History{Length: ms(5000), Ops: latchOps(1,
		countDown(0, ms(100), ms(110), 0),
		await(1, ActTry, ms(200), ms(210), false),
	)}
	assert.Equal(t, []string{checkLatch}, failedChecks(t, h))
	h.Ops[2].Call = ms(105) // sent before the zero was certain
	assert.Empty(t, failedChecks(t, h))
}

func TestLatchCheckFindsAwaitsLeftWaiting(t *testing.T) {
	h := &History{Length: ms(5000), Ops: latchOps(1,
		await(1, ActAcquire, ms(50), ms(3000), true), // answered 2.89 s after the zero
		countDown(0, ms(100), ms(110), 0),
	)}
	assert.Equal(t, []string{checkStarvation}, failedChecks(t, h))

	h.Ops[1].Return = ms(1500) // within latchBound
	assert.Empty(t, failedChecks(t, h))

	h.Ops[1].Return, h.Ops[1].OK = -1, false // never answered
	assert.Equal(t, []string{checkStarvation}, failedChecks(t, h))

	// A pause of the waiter's client excuses it, a pause of another does not.
	h.Faults = []Fault{{Kind: FaultPause, Client: 0, From: ms(500), To: ms(4000)}}
	assert.Equal(t, []string{checkStarvation}, failedChecks(t, h))
	h.Faults[0].Client = 1
	assert.Empty(t, failedChecks(t, h))

	// An await of the same client answered with an error held it up until
	// then: its engine reads the latch once at a time.
	h.Faults = nil
	h.Ops[1].Return, h.Ops[1].OK = ms(3000), true
	h.Ops = append(h.Ops, Op{Client: 1, Owner: "x", Name: "l", Kind: messages.KindCountDownLatch, Action: ActAcquire,
		Call: ms(60), Return: ms(2000), Err: true})
	assert.Empty(t, failedChecks(t, h))

	// So does a lost read (a GET) of its client, until that read's call
	// gave up, even when the zero message answered the read's own waiter;
	// a lost script call or another client's lost read does not.
	h.Ops = h.Ops[:3]
	h.Faults = []Fault{{Kind: FaultLostReply, Client: 1, From: ms(40), To: ms(40), Detail: "evalsha"}}
	assert.Equal(t, []string{checkStarvation}, failedChecks(t, h))
	h.Faults = []Fault{{Kind: FaultLostReply, Client: 0, From: ms(40), To: ms(40), Detail: "get"}}
	assert.Equal(t, []string{checkStarvation}, failedChecks(t, h))
	h.Faults[0].Client = 1
	assert.Empty(t, failedChecks(t, h))
}

// TestSharedPermitIDsAreCaught runs an engine whose permit acquires all ask
// for one permit ID: a second owner then "takes" the permit the first one
// holds (the acquire is idempotent by ID), and a release of one ends the
// other's. The permits check must find it, unexcused, without faults.
func TestSharedPermitIDsAreCaught(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindPermitSemaphore}, Names: 1,
		newPermitID: func() string { return "0123456789abcdef0123456789abcdef" }}
	if !caughtWithin(t, o, 20, checkPermitCount) {
		t.Fatal("20 seeds with one permit ID for all passed the permits check")
	}
}

// TestDoubleCountDownsAreCaught runs count-downs that each count the latch
// down twice: an await is then answered "reached zero" before enough
// count-downs were sent. The latch check must find it, unexcused, without
// faults.
func TestDoubleCountDownsAreCaught(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindCountDownLatch}, doubleCountDown: true}
	if !caughtWithin(t, o, 20, checkLatch) {
		t.Fatal("20 seeds whose count-downs count twice passed the latch check")
	}
}

// caughtWithin runs o with seeds 1 to seeds and tells whether one of them
// failed check (any check when ""), logging the first that did.
func caughtWithin(t *testing.T, o Options, seeds int64, check string) bool {
	t.Helper()
	for seed := int64(1); seed <= seeds; seed++ {
		o.Seed = seed
		res, err := Run(o)
		require.NoError(t, err)
		for _, v := range res.Failed() {
			if check == "" || v.Check == check {
				t.Logf("caught at seed %d: %s: %s", seed, v.Check, v.What)
				return true
			}
		}
	}
	return false
}

// TestWorkloadUsesTheCountingKinds: fault-free runs of the permit-expirable
// semaphore and the latch take each path the checks look at: permits
// released in time and after their lease (refused), awaits answered at
// once, after waiting, and not yet, latches reaching zero.
func TestWorkloadUsesTheCountingKinds(t *testing.T) {
	o := Options{Length: 10 * time.Second, Kinds: []messages.Kind{messages.KindPermitSemaphore,
		messages.KindCountDownLatch}}
	seen := map[string]int{}
	for _, res := range runSeeds(t, o, 1, 10) {
		assert.Empty(t, res.Violations, "seed %d", res.Seed)
		for _, hd := range res.Holds {
			seen["permit "+string(hd.End)]++
		}
		for _, op := range res.Ops {
			switch {
			case op.Action == ActRelease && op.OK:
				seen["release"]++
			case op.Action == ActRelease && op.Return >= 0 && !op.Err:
				seen["release refused"]++
			case op.Action == ActCountDown && op.OK && op.Token == 0:
				seen["count down to zero"]++
			case op.Kind == messages.KindCountDownLatch && op.Action == ActAcquire && op.OK:
				if op.Return-op.Call > 100*time.Millisecond {
					seen["await after waiting"]++
				} else {
					seen["await at once"]++
				}
			case op.Kind == messages.KindCountDownLatch && op.Action == ActTry && op.Return >= 0 && !op.OK:
				seen["try not yet"]++
			}
		}
	}
	t.Log(seen)
	for _, k := range []string{"permit released", "permit expired", "release", "release refused", "count down to zero",
		"await after waiting", "await at once", "try not yet"} {
		assert.Positive(t, seen[k], k)
	}
}
