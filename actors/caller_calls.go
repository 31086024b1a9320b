package actors

// A Redis call made on its caller's goroutine.
//
// A Client's caller whose context can never end (context.Background, say)
// waits for its answer whatever happens, so the goroutine it waits on may
// make the Redis call itself: the call then costs no hand-off to a worker
// and no wake-up of the caller when its answer comes. Routes.Call offers
// the posting goroutine in the request's entry (keyEntry.caller) while it
// posts the request; the key actor, starting a call (keyActor.dispatch),
// takes the offer if it still stands, and the goroutine makes that call
// once the post returns (keyEntry.withdraw). The actor's state is still
// touched only in its turns: the call reads only what start prepared for
// it, as on a worker, and its result comes back as a message.
//
// A caller whose context may end keeps the workers: it must be able to
// return at once, while a Redis call in go-redis cannot be cut short on
// its goroutine (it reads until the reply or its client's timeout).

// callerOffer marks an entry's standing offer (keyEntry.caller); it is
// never run.
var callerOffer op

// offer offers the calling goroutine for the next Redis call of e's actor,
// unless another goroutine's offer stands. It tells whether it did; the
// caller then withdraws it once its request is posted.
func (e *keyEntry) offer() bool {
	return e.caller.CompareAndSwap(nil, &callerOffer)
}

// withdraw ends the calling goroutine's offer and makes the call the actor
// handed it, if it took the offer.
func (e *keyEntry) withdraw() {
	if o := e.caller.Swap(nil); o != nil && o != &callerOffer {
		o.run()
	}
}

// dispatch runs o's Redis call: on a goroutine whose offer stands in the
// actor's entry (Routes.Call), else on the engine's workers. A
// simulation's schedule (NewWorkersOn) takes every call.
func (a *keyActor) dispatch(o *op) {
	cfg := a.refs.cfg
	if cfg.Routes != nil && cfg.Workers.runsInline() {
		if e := cfg.Routes.load(a.key); e != nil && e.caller.CompareAndSwap(&callerOffer, o) {
			return
		}
	}
	cfg.Workers.run(o)
}

// reclaim hands the call in flight to the workers when it still waits in
// the actor's entry for the goroutine whose offer took it: that goroutine
// may be the one running this turn, still posting its request, and a wait
// for the call (stopCalls) would then never end. The goroutine then finds
// its offer untaken.
func (a *keyActor) reclaim() {
	cfg := a.refs.cfg
	if o := a.inflight; o != nil && cfg.Routes != nil {
		if e := cfg.Routes.load(a.key); e != nil && e.caller.CompareAndSwap(o, &callerOffer) {
			cfg.Workers.run(o)
		}
	}
}
