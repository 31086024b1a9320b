package actors

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/messages"
)

// call sends msg through routes.Call from a goroutine of its own, as a
// Client's caller whose context cannot end does, and returns the reply
// within 5 s.
func (e *engine) call(t *testing.T, routes *Routes, msg any) any {
	t.Helper()
	type result struct {
		r   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		f := actor.NewFuture(e.sys, 5*time.Second)
		routes.Call(e.sys.Root, e.root, msg, f.PID())
		r, err := f.Result()
		done <- result{r, err}
	}()
	res := await.Value(t, done, 10*time.Second, "Call's return and the reply")
	require.NoError(t, res.err, "the answer to %T %+v", msg, msg)
	return res.r
}

// panicOnce panics the first time it is called once armed is set.
func panicOnce(armed *atomic.Bool, why string) {
	if armed.CompareAndSwap(true, false) {
		panic(why)
	}
}

// A key actor that fails in the turn that handed its call to the posting
// goroutine's offer (the call not begun: that goroutine is still posting,
// running this very turn) hands the call to the workers rather than wait
// for it for ever, undoes the acquire it made, and answers the request.
func TestFailureAfterACallWasHandedToItsPosterDoesNotWaitForIt(t *testing.T) {
	var armed atomic.Bool
	var routes *Routes
	e, routes := routedEngine(t, func(c *Config) {
		c.opStarted = func(a *keyActor, o *op) {
			// Only a call handed to its poster: a request posted while a
			// worker still ran a turn of the actor may find its offer
			// withdrawn, and the test tries again.
			if e := routes.load(a.key); o.kind == opAttempt && o.owner == "p" && e != nil && e.handed.Load() == o {
				panicOnce(&armed, "a bug after the call was handed over")
			}
		}
	})
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "handed", Owner: "x", RequestID: "x1", Lease: time.Minute}))
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "handed", Owner: "x", RequestID: "x2"}))

	armed.Store(true)
	e.failsOnItsCaller(t, routes, "handed", "p", &armed)
}

// A key actor that fails in its turn on a call's result, run on the
// goroutine that made the call (the mailbox was idle), does not wait for
// that call to end: it has, but for the result's delivery this turn is
// part of.
func TestFailureInTheTurnOnACallsResultDoesNotWaitForThatCall(t *testing.T) {
	var armed, armHanded atomic.Bool
	var handed atomic.Pointer[op] // the last attempt of q's handed to its poster
	var routes *Routes
	e, routes := routedEngine(t, func(c *Config) {
		c.opStarted = func(a *keyActor, o *op) {
			if e := routes.load(a.key); o.kind == opAttempt && o.owner == "q" && e != nil && e.handed.Load() == o {
				handed.Store(o)
			}
		}
		c.opDoneSeen = func(_ *keyActor, d *opDone) {
			if d.op.kind == opAttempt && d.op.owner == "q" {
				panicOnce(&armed, "a bug in the turn on a result")
				if handed.CompareAndSwap(d.op, nil) {
					panicOnce(&armHanded, "a bug in the turn on a result made on its caller")
				}
			}
		}
	})
	armed.Store(true)
	r := e.send(t, routes, &messages.Acquire{Name: "result", Owner: "q", RequestID: "q1", Lease: time.Minute})
	require.IsType(t, &messages.AcquireFailed{}, r)
	require.ErrorContains(t, r.(*messages.AcquireFailed).Err, "internal error")
	require.Eventually(t, func() bool { return e.rdb.Exists(context.Background(), "result").Val() == 0 },
		5*time.Second, 5*time.Millisecond, "the failed actor undid the acquire")

	// Again, with the call made on its caller's goroutine (its result's
	// turn then runs there, as it ran on the worker above).
	require.Eventually(t, func() bool { return e.keyActors(t) == 0 }, 5*time.Second, 5*time.Millisecond, "root stopped the failed actor")
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "result", Owner: "x", RequestID: "x1", Lease: time.Minute}))
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "result", Owner: "x", RequestID: "x2"}))
	armHanded.Store(true)
	e.failsOnItsCaller(t, routes, "result", "q", &armHanded)
}

// failsOnItsCaller acquires name for owner through routes.Call until its
// call is handed to its caller, where the test made the key actor fail
// (armed, which the failure clears): each try whose call ran on a worker
// (a request posted while a worker still ran a turn of the actor finds its
// offer withdrawn) acquires, and is released before the next. It checks
// that the failed actor answered the request and undid the acquire.
func (e *engine) failsOnItsCaller(t *testing.T, routes *Routes, name, owner string, armed *atomic.Bool) {
	t.Helper()
	for i := range 20 {
		r := e.call(t, routes, &messages.Acquire{Name: name, Owner: owner, RequestID: fmt.Sprint(owner, "-try", i), Lease: time.Minute})
		if _, ok := r.(*messages.Acquired); ok { // its call ran on a worker
			require.IsType(t, &messages.Released{}, e.call(t, routes, &messages.Release{Name: name, Owner: owner, RequestID: fmt.Sprint(owner, "-undo", i)}))
			continue
		}
		require.False(t, armed.Load(), "the actor failed where the test made it")
		require.IsType(t, &messages.AcquireFailed{}, r)
		require.ErrorContains(t, r.(*messages.AcquireFailed).Err, "internal error")
		require.Eventually(t, func() bool { return e.rdb.Exists(context.Background(), name).Val() == 0 },
			5*time.Second, 5*time.Millisecond, "the failed actor undid the acquire its call made")
		return
	}
	t.Fatal("within 20 tries, no acquire's call was handed to its poster")
}

// An offer is taken only by its own request's call: another request's call
// (an attempt of another waiter, an internal release) goes to the workers,
// so a caller never waits on, nor meets the faults of, a call not its own.
func TestOfferIsTakenOnlyByItsOwnRequestsCall(t *testing.T) {
	mine := &messages.Acquire{Name: "n", Owner: "me", RequestID: "r1"}
	other := &messages.Acquire{Name: "n", Owner: "other", RequestID: "r1"} // the same ID, another request
	release := &messages.Release{Name: "n", Owner: "me", RequestID: "r2"}
	attempt := func(m *messages.Acquire) *op { return &op{kind: opAttempt, w: &waiter{req: m}} }

	var e keyEntry
	require.True(t, e.offer(&mine.RequestID))
	require.False(t, e.offer(&release.RequestID), "one offer stands at a time")
	assert.False(t, e.handOver(attempt(other)), "another request's attempt")
	assert.False(t, e.handOver(&op{kind: opRelease, owner: "me"}), "an internal release, no caller's")
	assert.False(t, e.handOver(&op{kind: opUndo, w: &waiter{req: mine}}), "an undo of my request: no caller waits on it")
	assert.Nil(t, e.handed.Load())
	o := attempt(mine)
	require.True(t, e.handOver(o), "my request's attempt")
	assert.Same(t, o, e.handed.Load())
	assert.False(t, e.handOver(attempt(mine)), "taken once")

	var f keyEntry
	require.True(t, f.offer(&release.RequestID))
	assert.True(t, f.handOver(&op{kind: opRelease, req: release}), "a Release's own call")
	assert.Same(t, callTaken, f.offered.Load())
}
