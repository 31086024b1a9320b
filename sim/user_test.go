package sim

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// counter is a user actor that, again and again, takes the lock
// "counter", increments the KV store's "n" under it, appends to the log,
// records the increment and releases the lock.
type counter struct {
	p     *Process
	owner string
	self  *actor.PID
	reqs  int
	// onStarted, when set, runs on Started (a test's bad step).
	onStarted func(p *Process)
}

type tick struct{}

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.self = ctx.Self()
		if c.onStarted != nil {
			c.onStarted(c.p)
		}
		c.p.SendAfter(10*time.Millisecond, c.self, &tick{})
	case *tick:
		c.reqs++
		ctx.Request(c.p.Engine(), &messages.Acquire{Name: "counter", Kind: messages.KindLock, Owner: c.owner,
			RequestID: fmt.Sprintf("%s-%d", c.owner, c.reqs), Watch: true,
			Deadline: c.p.Now().Add(2 * time.Second)})
	case *messages.Acquired:
		v, _ := c.p.KV().Get("n")
		n, _ := strconv.Atoi(v)
		c.p.KV().Put("n", strconv.Itoa(n+1))
		c.p.Log().Append(fmt.Sprintf("%s set n=%d", c.owner, n+1))
		c.p.Record(Event{Owner: c.owner, What: "inc", Key: "n", Value: strconv.Itoa(n + 1)})
		c.reqs++
		ctx.Request(c.p.Engine(), &messages.Release{Name: "counter", Kind: messages.KindLock, Owner: c.owner,
			RequestID: fmt.Sprintf("%s-%d", c.owner, c.reqs)})
	case *messages.AcquireFailed, *messages.Released, *messages.ReleaseFailed:
		c.p.SendAfter(time.Duration(c.p.Rand().Int64N(int64(50*time.Millisecond))), c.self, &tick{})
	}
}

// counterWorkload runs one counter per process; onStarted, when set, runs
// in each counter's Started.
func counterWorkload(check func(h *History) []Violation, onStarted func(p *Process)) *Workload {
	return &Workload{
		Actors: func(p *Process) []actor.Producer {
			return []actor.Producer{func() actor.Actor {
				return &counter{p: p, owner: fmt.Sprintf("counter-%d", p.ID()), onStarted: onStarted}
			}}
		},
		Check: check,
	}
}

// TestUserWorkload runs the counters without faults: every increment is
// recorded (at its simulated time, as its process's) and logged, the
// counters' lock operations are in the history for warden's checks, which
// find nothing, the user's check sees the history and its violations are
// reported, unexcused; the timeline draws the events.
func TestUserWorkload(t *testing.T) {
	checked := 0
	check := func(h *History) []Violation {
		checked++
		return []Violation{{Check: "user check", At: h.Events[0].At, Name: "n", What: "reported"}}
	}
	res, err := Run(Options{Seed: 1, Clients: 3, Length: 3 * time.Second, Workload: counterWorkload(check, nil)})
	require.NoError(t, err)
	require.Equal(t, 1, checked)
	require.NotEmpty(t, res.Events)
	require.Len(t, res.Log, len(res.Events))
	procs := map[int]bool{}
	for i, e := range res.Events {
		procs[e.Process] = true
		assert.Equal(t, fmt.Sprintf("counter-%d", e.Process), e.Owner)
		assert.Equal(t, strconv.Itoa(i+1), e.Value, "the lock keeps the increments apart")
		assert.Equal(t, e.At, res.Log[i].At)
		assert.Equal(t, e.Process, res.Log[i].Process)
		if i > 0 {
			assert.Greater(t, e.At, res.Events[i-1].At)
		}
	}
	assert.Len(t, procs, 3, "every process ran its counter")
	require.NotEmpty(t, res.Ops)
	require.NotEmpty(t, res.Holds)
	for _, h := range res.Holds {
		assert.Contains(t, []HoldEnd{EndReleased, EndRunEnd}, h.End)
		assert.Equal(t, "counter", h.Name)
	}
	failed := res.Failed()
	require.Len(t, failed, 1, "only the user's violation: %v", res.Violations)
	assert.Equal(t, "user check", failed[0].Check)

	var page bytes.Buffer
	require.NoError(t, WriteTimeline(&page, &res.History, res.Violations))
	assert.Contains(t, page.String(), "inc by counter-0, process 0, at ")
	assert.Contains(t, page.String(), "<h2>Events (")
}

// TestUserWorkloadReplay runs the counters with every fault over 20 seeds
// twice: the same seed gives the same trace, byte for byte, and warden's
// checks find nothing a fault does not excuse.
func TestUserWorkloadReplay(t *testing.T) {
	o := Options{Clients: 3, Length: 5 * time.Second, Faults: AllFaults(), KeepTrace: true,
		Workload: counterWorkload(nil, nil)}
	a, b := runSeeds(t, o, 1, 20), runSeeds(t, o, 1, 20)
	for i := range a {
		require.NotEmpty(t, a[i].Events, "seed %d", a[i].Seed)
		require.Equal(t, a[i].Lines, b[i].Lines, "seed %d replayed differently", a[i].Seed)
		assert.Empty(t, a[i].Failed(), "seed %d", a[i].Seed)
	}
	sameTraces(t, 1, traceHashes(a), traceHashes(b))
}

func traceHashes(rs []*Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Trace
	}
	return out
}

// TestUserWorkloadNextToBuiltin runs the counters next to the built-in
// workload's owners.
func TestUserWorkloadNextToBuiltin(t *testing.T) {
	wl := counterWorkload(nil, nil)
	wl.Builtin = true
	res, err := Run(Options{Seed: 3, Length: 3 * time.Second, Workload: wl})
	require.NoError(t, err)
	require.NotEmpty(t, res.Events)
	owners := map[string]bool{}
	for _, op := range res.Ops {
		owners[op.Owner] = true
	}
	assert.True(t, owners["c0-o0"], "the built-in owners ran")
	assert.True(t, owners["counter-0"], "the counters ran")
	assert.Empty(t, res.Failed())
}

// TestUserBlockedStep: a user actor that waits on a channel outside the
// simulation ends the run with ErrBlocked, naming the actor and the step,
// instead of hanging it.
func TestUserBlockedStep(t *testing.T) {
	release := make(chan struct{})
	wl := counterWorkload(nil, func(*Process) { <-release })
	wl.StepTimeout = time.Second
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = Run(Options{Seed: 7, Length: 2 * time.Second, Workload: wl})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run hung on a blocked step")
	}
	close(release) // the abandoned goroutine returns
	require.ErrorIs(t, err, ErrBlocked)
	var se *StepError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, int64(7), se.Seed)
	assert.Equal(t, "user-0", se.Actor)
	assert.Equal(t, "*actor.Started", se.Message)
	assert.Positive(t, se.Step)
	assert.Contains(t, err.Error(), "seed 7, step ")
	assert.Contains(t, err.Error(), `actor "user-0" handling *actor.Started`)
}

// TestUserPanicEndsOnlyItsSeed: a user actor that panics in seed 2 ends
// that seed's run with ErrPanicked, its stack and its seed; seeds 1 and 3
// run.
func TestUserPanicEndsOnlyItsSeed(t *testing.T) {
	wl := counterWorkload(nil, func(p *Process) {
		if p.Seed() == 2 && p.ID() == 1 {
			panic("counter broke")
		}
	})
	res, errs := RunSeeds(Options{Length: 2 * time.Second, Workload: wl}, 1, 3)
	require.NoError(t, errs[0])
	require.NoError(t, errs[2])
	require.NotEmpty(t, res[0].Events)
	require.NotEmpty(t, res[2].Events)
	require.ErrorIs(t, errs[1], ErrPanicked)
	var se *StepError
	require.True(t, errors.As(errs[1], &se))
	assert.Equal(t, int64(2), se.Seed)
	assert.Equal(t, 1, se.Process)
	assert.Equal(t, "counter broke", se.Panic)
	assert.Contains(t, se.Stack, "TestUserPanicEndsOnlyItsSeed")
	assert.Contains(t, errs[1].Error(), "seed 2, step ")
}

// TestUserCheckPanic: an invariant that panics ends the seed with
// ErrPanicked.
func TestUserCheckPanic(t *testing.T) {
	_, err := Run(Options{Seed: 1, Length: time.Second, Workload: counterWorkload(func(*History) []Violation {
		panic("check broke")
	}, nil)})
	require.ErrorIs(t, err, ErrPanicked)
	assert.Contains(t, err.Error(), "check broke")
}

// TestKVFencing: a fenced call below the key's fence is refused and
// changes nothing; a fenced read raises the fence; unfenced calls ignore
// it; the log stamps every append with the simulated time.
func TestKVFencing(t *testing.T) {
	w := newWorld(1, newTrace(false))
	u := &userRun{w: w, kv: kvStore{data: map[string]string{}, fences: map[string]int64{}}}
	kv := &KV{u: u, proc: 0}
	require.NoError(t, kv.PutFenced("job", "a", 2))
	require.ErrorIs(t, kv.PutFenced("job", "b", 1), ErrStaleToken)
	v, ok := kv.Get("job")
	require.True(t, ok)
	require.Equal(t, "a", v)
	_, _, err := kv.GetFenced("job", 3)
	require.NoError(t, err)
	require.ErrorIs(t, kv.PutFenced("job", "c", 2), ErrStaleToken)
	_, _, err = kv.GetFenced("job", 2)
	require.ErrorIs(t, err, ErrStaleToken)
	require.NoError(t, kv.PutFenced("job", "d", 3), "an equal token is the same holder")
	kv.Put("job", "e")
	v, _ = kv.Get("job")
	require.Equal(t, "e", v)
	require.NoError(t, kv.PutFenced("other", "x", 1), "each key has its own fence")

	w.now = 1500 * time.Millisecond
	(&Log{u: u, proc: 2}).Append("hello")
	require.Equal(t, []LogEntry{{At: 1500 * time.Millisecond, Process: 2, Entry: "hello"}}, u.log)
}

// TestWorkloadBadInput: a workload without actors, or with a negative
// step timeout, is refused before the run.
func TestWorkloadBadInput(t *testing.T) {
	_, err := Run(Options{Workload: &Workload{}})
	require.ErrorContains(t, err, "Workload.Actors")
	_, err = Run(Options{Workload: &Workload{Actors: counterWorkload(nil, nil).Actors, StepTimeout: -1}})
	require.ErrorContains(t, err, "StepTimeout")
}

// parent spawns a counter as its child with Process.Props: the child runs
// on the simulation's scheduler as its parent does.
type parent struct{ p *Process }

func (a *parent) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		ctx.Spawn(a.p.Props(func() actor.Actor {
			return &counter{p: a.p, owner: fmt.Sprintf("child-%d", a.p.ID())}
		}))
	}
}

// TestUserChildActors: a child spawned with Process.Props is simulated: it
// records its events, and its runs replay byte for byte.
func TestUserChildActors(t *testing.T) {
	o := Options{Length: 2 * time.Second, KeepTrace: true, Workload: &Workload{
		Actors: func(p *Process) []actor.Producer {
			return []actor.Producer{func() actor.Actor { return &parent{p: p} }}
		},
	}}
	a, b := runSeeds(t, o, 1, 5), runSeeds(t, o, 1, 5)
	for i := range a {
		require.NotEmpty(t, a[i].Events)
		assert.Equal(t, "child-", a[i].Events[0].Owner[:6])
		require.Equal(t, a[i].Lines, b[i].Lines, "seed %d", a[i].Seed)
	}
}

// TestUserActorsBadInput: a nil producer, or an Actors that panics, ends
// the run with an error instead of the sweep.
func TestUserActorsBadInput(t *testing.T) {
	_, err := Run(Options{Seed: 1, Length: time.Second, Workload: &Workload{
		Actors: func(*Process) []actor.Producer { return []actor.Producer{nil} }}})
	require.ErrorContains(t, err, "nil producer")
	_, err = Run(Options{Seed: 1, Length: time.Second, Workload: &Workload{
		Actors: func(*Process) []actor.Producer { panic("no actors") }}})
	require.ErrorIs(t, err, ErrPanicked)
	assert.Contains(t, err.Error(), "no actors")
}
