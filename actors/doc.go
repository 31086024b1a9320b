// Package actors is warden's engine: one actor per concern, each holding
// the state it owns.
//
// This package is internal to warden: only client, messages and sim are
// supported API.
//
// # The actors
//
// Each actor's type, props and Receive are in a file named for it; code an
// actor owns that reads best on its own is in files named for what it does
// (one actor may span several files, as the key actor does). Only an
// actor's Receive changes its state.
//
//   - root (root_actor.go, rootActor): spawns the subscriber, the renewer
//     and (unless the Client keeps no record) the registry as it starts; owns the (name, kind) → key actor
//     table (rootActor.routes, a Routes: routes.go), spawning a key actor, or a count actor for
//     the counting kinds, on first use, under an ID of its own making
//     (actor_ids.go: one that shares protoactor's registry maps with the
//     other key actors', so a live name costs the registry little); validates and routes every
//     messages.* request sent to it (rootActor.route, which forwards it
//     keeping its sender); stops idle key actors (passivation) with a
//     handshake, so no request is lost to a stopping actor. The table is
//     the one piece of root that others read: a sender (the Client, a
//     simulation's workload) sends a request straight to the live key
//     actor of its name (Routes.Request), root's hop left out; each entry
//     counts those requests, and root stops an idle actor only by closing
//     its entry at the count the actor has received (keyEntry.closeAt).
//   - key actor (keyActor), one per (name, kind) of the held kinds: owns
//     the name's holdings in this process (owner → hold count, lease,
//     watchers), its waiters, the Redis requests queued and the one in
//     flight, its renewal registrations and its subscriptions. Its files,
//     each named for the state it owns: key_actor.go (the state, Receive,
//     the outcomes of attempts and releases, the deadlines and timer),
//     key_holdings.go (the holdings, their watchers, lose and releaseLost),
//     key_ops.go (the op queue, the op in flight and handoffs),
//     key_renewal.go (the renewer's registrations kept in line),
//     key_subscriptions.go (the channels wanted against those subscribed),
//     key_groups.go (a group lock's values per owner), key_stop.go (stop
//     and failure), wait_queue.go (the waiter queue, the waiter's life and
//     the wake policy, which the count actor shares) with deadlines.go (its
//     deadline heap), lock_io.go (the Redis
//     calls of each lock kind, lockIO), extend.go (Extend), fair_place.go
//     (a fair waiter's place kept alive in Redis's queue), lost_release.go
//     (the release of what is left of a holding reported lost),
//     caller_calls.go (a Redis call made on the goroutine of the caller
//     it is for: the offer a request makes in its route entry, which the
//     key actor's dispatch takes) and backoff.go (a spin lock waiter's
//     polls).
//   - count actor (count_actor.go, countActor), one per name of the
//     counting kinds (semaphore, permit-expirable semaphore, count-down
//     latch): their waiters and the one Redis request in flight; it holds
//     and renews nothing.
//   - subscriber (subscriber_actor.go, subscriberActor): owns the engine's
//     pub/sub (one connection; on a Redis 7 Cluster, SSUBSCRIBE with one
//     connection per shard), whose reader loop runs on the workers;
//     subscribes a channel for the key actors and count actors listening
//     on it, fans each message out to them (unlocked: the subscriber's
//     turn and theirs run on the reader's goroutine when their mailboxes
//     are idle), and after a reconnect tells each to try again (retry),
//     since messages sent meanwhile are lost.
//   - renewer (renewer_actor.go, renewerActor): owns every watchdog-mode
//     holding's registration; every watchdog/3 renews them all in batched
//     scripts (one call per slot on a Cluster) and tells a key actor of a
//     holding found gone (renewalGone) or not renewed for a whole watchdog
//     timeout (renewalExpired).
//   - registry (registry_actor.go, registryActor): writes the Client's
//     registry record as the engine starts and every renewal period.
//
// The key actor and the count actor share waiting_actor.go
// (waitingActor, which each embeds: the key, the waiters, the timers, the
// Redis calls waited for on stop, the fault, and the guard, fail and
// answer-all skeleton around them) and replies.go (one builder per
// failure reply, which root uses too).
//
// The rest is shared: config.go (Config, read-only once the engine
// starts, and the Redis calls' contexts), protocol.go (the messages
// between the engine's own actors), mailbox.go (queueMailbox, every
// actor's mailbox), workers.go (Workers, the goroutine pool that is every
// actor's dispatcher and runs their Redis calls), timer.go (clockTimer, an
// actor's own timer on the injected clock), idle_timers.go (idleTimer,
// each key actor's and count actor's idle timer, and idleTimers, the one
// clock timer root makes for all of them: a heap of the ticks due, which
// only sends each its idleTick), schedulers.go (RunEnginesOn, for
// package wardentest) and order.go (sortedKeys: map order made
// deterministic for the simulation).
//
// # The life of an acquire
//
// Lock.Lock, from the call to its return; Lease 0 (watchdog mode) on a
// lock nobody holds. Each hop says where it runs and what state changes.
//
//  1. Caller's goroutine, package client. Lock.Lock checks ctx and calls
//     Lock.acquire, which builds a messages.Acquire (a fresh request ID,
//     Watch set) and calls Client.wait: a span and the acquire's metrics
//     begin, then Client.waitReply asks Client.request to register a
//     reply channel under the request ID (mailbox.expect; the only state
//     on this side, behind the mailbox's mutex) and send the Acquire with
//     the Client's mailbox as its sender (Client.post): straight to the
//     name's key actor when root's table has a live one (Routes.Request
//     validates it as root would, counts it in the entry and sends it;
//     Routes.Call, for a ctx that can never end, also offers the caller's
//     goroutine for the call: see step 4), and to root otherwise. The
//     message lands in the actor's
//     queueMailbox, whose queueMailbox.schedule runs the pass right
//     there, on the caller's goroutine, when the mailbox is idle (an
//     inline pass: inlineMessage names the messages that may), and else
//     hands it to Workers. The caller then blocks on the reply channel,
//     the Client's end and ctx; a Cancel it sends when ctx ends takes the
//     Acquire's path (Routes.RequestOn), so it cannot overtake it.
//  2. Only on a name's first use (or its first since passivation): root's
//     turn, on the caller's goroutine (a worker when root was busy).
//     rootActor.Receive validates the request (its own checks and, on a
//     Cluster, the slot rule) and rootActor.route looks the key actor up,
//     spawning it and publishing it in the table (state: rootActor.routes
//     and the entry's routed count, for the passivation handshake), and
//     forwards the Acquire to it, sender kept. The key actor's pass runs
//     nested on the same goroutine when its mailbox is idle.
//  3. The same goroutine, the key actor's turn. keyActor.Receive counts the
//     request (waitingActor.seen) and keyActor.onAcquire queues a waiter
//     (waitQueue.push: ready; a try when its deadline had passed). Then
//     keyActor.pump picks the next Redis request (releases and undos first,
//     then the head waiter's attempt) and keyActor.start makes it the one in
//     flight (keyActor.inflight), registers the owner for renewal before
//     the round trip (keyActor.register: a holding is never unrenewed
//     between its acquire and its registration; the registration stays
//     pending for registerDelay, and one unregistered by then never reaches
//     the renewer, so a short holding costs it no message), and hands
//     the op itself over (keyActor.dispatch): to the caller's goroutine
//     when its offer stands in the name's route entry (a caller whose
//     context can never end posts with Routes.Call, which makes the call
//     itself once its post returns), else to Workers as a job.
//     keyActor.settle re-arms the timer,
//     brings the subscriptions in line (keyActor.syncSubscriptions) and the
//     idle timer.
//  4. Off the actor, on a worker goroutine or on the caller's once its
//     post returned (keyEntry.withdraw): op.run. It takes a call context
//     (Config.ioContext: shared deadlines, cancelled by Close) and runs
//     lockIO.acquireSynced, which with replica sync undoes and retries an
//     acquire the replicas did not acknowledge. lockIO.acquire picks the
//     kind's script: Scripts.AcquireWith (redisio) for the plain, fenced,
//     spin and non-reentrant locks, FairAcquire, ReadAcquire,
//     WriteAcquire or GroupAcquire for the others. redisio builds the call
//     from the key actor's LockArgs and sends it with scriptCall.run:
//     EVALSHA, EVAL when the server lacks the script, through the
//     AutoPipeline, which batches calls made at the same time on the
//     callers' own goroutines (it has none of its own), two or more
//     acquires or unlocks of plain locks as one batch script call. In Redis,
//     redisio/scripts/acquire.lua writes the lock hash (owner → hold
//     count, the acquire record field) and its TTL: the state that counts.
//     The reply becomes an AcquireResult; op.run fills the op's opDone and
//     sends it to the key actor.
//  5. The call's goroutine, the key actor's turn: op.run's post of the
//     opDone runs the pass inline when the mailbox is idle.
//     keyActor.onOpDone clears keyActor.inflight and keyActor.onAttemptDone
//     settles the outcome.
//     Acquired: a holding is made or updated (keyActor.holdings: count,
//     lease, end), the waiter leaves the queue, the sender becomes a
//     watcher, and messages.Acquired goes to the Client's mailbox: its
//     SendUserMessage runs right there on this goroutine, records the
//     holding's start and puts the reply on the caller's channel.
//     keyActor.syncRenewal keeps the renewer's registration in line.
//     Refused (held elsewhere): the waiter is marked refused and listens on
//     the lock's channel, sleeping until the holder's PTTL at most;
//     keyActor.settle subscribes the channel (subscribe to the subscriber,
//     which answers subscribed: one more attempt, for an unlock published
//     before the subscription). An unlock message (unlocked, from the
//     subscriber's reader on the workers), the timer (tick) or a local
//     release wakes the waiter (waitQueue.wakeChannel, waitQueue.wakeHead),
//     and step 3's pump
//     makes its next attempt.
//  6. Caller's goroutine. Client.waitReply takes the reply off the channel
//     and Lock.acquire binds the handle's Lost channel to the holding
//     (Lock.bindHolding, Client.watchLost); the span and metrics end, and
//     Lock.Lock returns nil.
//
// So a free lock of a name in use costs three actor messages (Acquire to
// the key actor, the op's opDone, Acquired to the Client's mailbox), four
// on the name's first use (root's forward), and, with idle mailboxes, one
// hand-off to a worker (the Redis call, whose result turn runs on that
// worker) and the caller's wake-up on its channel; for a caller whose
// context can never end, none: its goroutine makes the call, runs the
// result's turn and finds the reply on its channel. On the workers, the
// bookkeeping after the call starts (the renewer's registration, the
// timers) runs on the caller's goroutine while the call is on the wire,
// and the bookkeeping after the answer runs on the worker while the
// caller returns. A busy mailbox's pass goes to a worker, as every pass
// does under a simulation's schedule (Workers.runsInline), which also
// takes every call.
//
// The other requests follow the same path to the key actor: a Release
// becomes an op (opRelease) queued ahead of attempts; the unlock of a last
// hold pauses its renewal first and may hand the lock to the next local
// waiter in the same round trip (keyActor.handoffTo, lockIO.handoff). A
// Cancel withdraws a waiter (an attempt in flight that acquires is then
// released). The renewer's ticks run renewals on the workers and report
// back to the key actors: a holding a renewal found gone is looked at
// again first (opVerify), one not renewed for a whole watchdog timeout is
// lost at once, and keyActor.lose sends messages.LockLost to the
// holding's watchers.
//
// # Rules
//
// No mutex guards engine state: state lives in an actor and changes only in
// its Receive. Redis I/O runs on goroutines the actor owns and waits for,
// and comes back as a message. Every timer comes from the injected
// clockwork.Clock, only sends a message, carries a generation so stale
// ticks are ignored (a key actor's pending registrations' timer carries
// none: its tick hands over only what is due by then, so a stale one
// finds less), and is stopped in Stopping. The one table shared outside an
// actor is Routes, the map from a name to its live key actor: only root
// writes it (on spawn and on passivation, under a shard's lock), callers
// only read it (under the shard's read lock, held for one map read), and each
// entry's one atomic count is how root learns that a request sent straight
// is still on its way, so a key actor never stops with one unread.
package actors
