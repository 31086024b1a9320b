package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
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
	e, routes := routedEngine(t, func(c *Config) {
		c.opStarted = func(_ *keyActor, o *op) {
			if o.kind == opAttempt && o.owner == "p" {
				panicOnce(&armed, "a bug after the call was handed over")
			}
		}
	})
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "handed", Owner: "x", RequestID: "x1", Lease: time.Minute}))
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "handed", Owner: "x", RequestID: "x2"}))

	armed.Store(true)
	r := e.call(t, routes, &messages.Acquire{Name: "handed", Owner: "p", RequestID: "p1", Lease: time.Minute})
	require.IsType(t, &messages.AcquireFailed{}, r)
	require.ErrorContains(t, r.(*messages.AcquireFailed).Err, "internal error")
	require.Eventually(t, func() bool { return e.rdb.Exists(context.Background(), "handed").Val() == 0 },
		5*time.Second, 5*time.Millisecond, "the failed actor undid the acquire its call made")
}

// A key actor that fails in its turn on a call's result, run on the
// goroutine that made the call (the mailbox was idle), does not wait for
// that call to end: it has, but for the result's delivery this turn is
// part of.
func TestFailureInTheTurnOnACallsResultDoesNotWaitForThatCall(t *testing.T) {
	var armed atomic.Bool
	e, routes := routedEngine(t, func(c *Config) {
		c.opDoneSeen = func(_ *keyActor, d *opDone) {
			if d.op.kind == opAttempt && d.op.owner == "q" {
				panicOnce(&armed, "a bug in the turn on a result")
			}
		}
	})
	armed.Store(true)
	r := e.send(t, routes, &messages.Acquire{Name: "result", Owner: "q", RequestID: "q1", Lease: time.Minute})
	require.IsType(t, &messages.AcquireFailed{}, r)
	require.ErrorContains(t, r.(*messages.AcquireFailed).Err, "internal error")
	require.Eventually(t, func() bool { return e.rdb.Exists(context.Background(), "result").Val() == 0 },
		5*time.Second, 5*time.Millisecond, "the failed actor undid the acquire")

	armed.Store(true) // again, with the call made on the caller's goroutine
	require.Eventually(t, func() bool { return e.keyActors(t) == 0 }, 5*time.Second, 5*time.Millisecond, "root stopped the failed actor")
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "result", Owner: "x", RequestID: "x1", Lease: time.Minute}))
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "result", Owner: "x", RequestID: "x2"}))
	r = e.call(t, routes, &messages.Acquire{Name: "result", Owner: "q", RequestID: "q2", Lease: time.Minute})
	require.IsType(t, &messages.AcquireFailed{}, r)
	require.ErrorContains(t, r.(*messages.AcquireFailed).Err, "internal error")
	require.Eventually(t, func() bool { return e.rdb.Exists(context.Background(), "result").Val() == 0 },
		5*time.Second, 5*time.Millisecond, "the failed actor undid the acquire")
}
