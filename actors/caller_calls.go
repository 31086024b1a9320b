package actors

import "github.com/warden-go/warden/messages"

// A Redis call made on its caller's goroutine.
//
// A Client's caller whose context can never end (context.Background, say)
// waits for its answer whatever happens, so the goroutine it waits on may
// make the Redis call itself: the call then costs no hand-off to a worker
// and no wake-up of the caller when its answer comes. Routes.Call offers
// the posting goroutine in the name's entry (keyEntry.offered) while it
// posts the request; the key actor, starting that request's call
// (keyActor.dispatch), takes the offer if it still stands, and the
// goroutine makes the call once the post returns (keyEntry.withdraw).
// The actor's state is still touched only in its turns: the call reads
// only what start prepared for it, as on a worker, and its result comes
// back as a message.
//
// A caller whose context may end keeps the workers: it must be able to
// return at once, while a Redis call in go-redis cannot be cut short on
// its goroutine (it reads until the reply or its client's timeout).

// callTaken marks an offer the key actor took (keyEntry.offered): the call
// it handed over is in keyEntry.handed.
var callTaken = new(string)

// offerFor is where a call may be offered for: the RequestID field of
// msg, an Acquire or a Release, whose address names the request (the
// message is not copied on its way to the key actor); nil for any other
// message.
func offerFor(msg any) *string {
	switch m := msg.(type) {
	case *messages.Acquire:
		return &m.RequestID
	case *messages.Release:
		return &m.RequestID
	}
	return nil
}

// offer offers the calling goroutine for the Redis call of its request,
// whose RequestID field is at id, unless another goroutine's offer stands.
// It tells whether it did; the caller then withdraws it once its request
// is posted.
func (e *keyEntry) offer(id *string) bool {
	return e.offered.CompareAndSwap(nil, id)
}

// withdraw ends the offer for the request at id and makes the call the
// actor handed over, if it took the offer. The entry is free for another
// offer once the call is taken out.
func (e *keyEntry) withdraw(id *string) {
	if e.offered.CompareAndSwap(id, nil) {
		return // not taken
	}
	o := e.handed.Swap(nil) // nil: reclaimed by a failing actor
	e.offered.Store(nil)
	if o != nil {
		o.run()
	}
}

// requestIDOf is the RequestID field of the request o's call is for, the
// one a caller may have offered its goroutine for: an attempt's Acquire, a
// Release's; nil for the calls no caller waits on alone (an undo, a
// verify, an internal release, a queue leave, an extend).
func (o *op) requestIDOf() *string {
	switch {
	case o.kind == opAttempt && o.w != nil:
		return &o.w.req.RequestID
	case o.kind == opRelease && o.req != nil:
		return &o.req.RequestID
	}
	return nil
}

// dispatch runs o's Redis call: on the goroutine whose offer for o's own
// request stands in the actor's entry (Routes.Call), else on the engine's
// workers. Only a request's own call is handed to its caller, so a caller
// never waits on another request's call, nor meets its faults. A
// simulation's schedule (NewWorkersOn) takes every call.
//
// A name with more than one waiter queued (contended) keeps the workers
// (an attempt's own waiter is one of them; a release with one waiter
// queued is still handed over, as measured): there the call's result
// hands the lock on to the next waiter, and on
// the caller's goroutine the caller's own work after it (the result's
// turn, its return, its next request) would run on the same CPU ahead of
// the next holder, which then waits for the caller to block; on a worker
// the caller, woken by its answer, runs beside the next holder. In
// alternating rounds against handing every such call over: workload (c)
// (8 goroutines, one name) 1.06x the acquisitions/s, (g)'s one lock (16
// goroutines) 1.05x the pairs/s (BENCHMARKS.md).
func (a *keyActor) dispatch(o *op) {
	cfg := a.refs.cfg
	// The entry is looked up only for a call a caller may wait on alone.
	if o.requestIDOf() != nil && len(a.waiters.list) <= 1 && cfg.Routes != nil && cfg.Workers.runsInline() {
		if e := cfg.Routes.load(a.key); e != nil && e.handOver(o) {
			return
		}
	}
	cfg.Workers.run(o)
}

// handOver hands o to the goroutine whose offer stands in e, and tells
// whether it did: only when the offer is for o's own request. Only the
// entry's actor hands calls over, in its turns, one at a time, so handed
// is free until the offer is taken.
func (e *keyEntry) handOver(o *op) bool {
	id := o.requestIDOf()
	if id == nil || e.offered.Load() != id {
		return false
	}
	e.handed.Store(o)
	if e.offered.CompareAndSwap(id, callTaken) {
		return true
	}
	e.handed.Store(nil) // withdrawn meanwhile
	return false
}

// reclaim hands the call in flight to the workers when it still waits in
// the actor's entry for the goroutine whose offer took it: that goroutine
// may be the one running this turn, still posting its request, and a wait
// for the call (stopCalls) would then never end. The goroutine then finds
// nothing to run.
func (a *keyActor) reclaim() {
	cfg := a.refs.cfg
	if o := a.inflight; o != nil && cfg.Routes != nil {
		if e := cfg.Routes.load(a.key); e != nil && e.handed.CompareAndSwap(o, nil) {
			cfg.Workers.run(o)
		}
	}
}
