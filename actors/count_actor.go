package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// countOp is the Redis request of a count actor, queued or in flight: an
// attempt of a waiter, or the undo of an attempt whose outcome is unknown
// or whose requester left meanwhile.
type countOp struct {
	w    *waiter
	undo bool
}

// countDone carries the result of the count actor's request back to it.
type countDone struct {
	op       *countOp
	acquired bool
	// next, when refused, is when the earliest permit lease ends (a
	// permit-expirable semaphore); zero when unknown.
	next time.Duration
	err  error
}

// countActor serves the waits of one counting name for this process: a
// semaphore's permits, a permit-expirable semaphore's permits, or a
// count-down latch reaching zero. Nobody holds these, so it keeps no
// holdings and renews nothing; it queues waiters, runs one Redis request
// at a time, and wakes waiters on the name's channel: a release message
// carrying the new count wakes that many waiters, a latch's zero wakes
// all. The head waiter also looks again on a bounded interval, so a lost
// message delays it, never hangs it.
type countActor struct {
	waitingActor
	channel string

	ops        []*countOp // undos, served before attempts
	inflight   *countOp
	subscribed bool
}

var _ actor.Actor = (*countActor)(nil)

// newCountActor makes the count actor of k (rootActor.countProps).
func newCountActor(k key, refs *engineRefs) actor.Actor {
	channel := redisio.SemaphoreChannel(k.Name)
	if k.Kind == messages.KindCountDownLatch {
		channel = redisio.LatchChannel(k.Name)
	}
	return &countActor{waitingActor: newWaitingActor(k, refs), channel: channel}
}

// Receive handles one message; every state change of the count actor
// happens here.
func (a *countActor) Receive(ctx actor.Context) {
	if a.fault != nil {
		a.receiveFailed(ctx)
		return
	}
	defer a.survive(ctx, a)
	switch m := ctx.Message().(type) {
	case *messages.Acquire:
		a.seen++
		w := a.waiters.push(m, ctx.Sender(), a.refs.cfg.Clock.Now())
		if m.Kind == messages.KindPermitSemaphore {
			w.permitIDs = make([]string, max(1, m.Permits))
			for i := range w.permitIDs {
				w.permitIDs[i] = a.refs.cfg.newPermitID()
			}
		}
	case *messages.Cancel:
		a.seen++
		a.cancel(ctx, m)
	case *WaiterCount:
		ctx.Respond(a.waiters.waiting())
		return
	case *countDone:
		a.onDone(ctx, m)
	case *subscribed:
		a.wake(1)
	case *unlocked:
		a.onMessage(ctx, m.Payload)
	case *retry:
		a.wake(len(a.waiters.list))
	case *crash:
		panic(fmt.Sprintf("warden: count actor %q told to crash", a.key.Name))
	case *tick:
		a.tickFor(ctx, m.Gen, a)
	case *idleTick:
		a.idleFor(ctx, m.Gen, a.isIdle(), nil)
		return
	case *actor.Stopping:
		a.stopCalls()
		a.answerAll(ctx, messages.ErrClosed)
		return
	default:
		return
	}
	a.pump(ctx)
	a.settle(ctx)
}

// onMessage wakes the waiters a message on the channel concerns: the
// latch's zero releases all; its new-count message makes every waiter read
// the count again (Redisson's delete publishes it, and a deleted latch
// counts zero); a semaphore's new count n wakes up to n waiters it could
// serve (n = 1 when the count cannot be read).
func (a *countActor) onMessage(ctx actor.Context, payload string) {
	if a.key.Kind == messages.KindCountDownLatch {
		switch payload {
		case redisio.LatchZeroMessage:
			a.latchReachedZero(ctx)
		case redisio.LatchNewCountMessage:
			a.wake(len(a.waiters.list))
		}
		return
	}
	n, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		n = 1
	}
	// Wake, in order, up to n waiters that n permits could serve: a head
	// asking for more than there are must not hold back those behind it.
	for _, w := range a.waiters.list {
		if n <= 0 {
			break
		}
		if need := max(w.req.Permits, 1); need <= n {
			wake(w)
			n--
		}
	}
}

// latchReachedZero answers every waiter of a latch whose zero was just
// published: the message is the answer, no waiter needs to read the count
// again. A waiter whose read is in flight is answered too, not held up
// until that read returns (a lost request holds it up to
// redisio.IOTimeout): it is then marked cancelled, so that its read's
// answer, whatever it is, is dropped (onDone) and the waiter goes.
func (a *countActor) latchReachedZero(ctx actor.Context) {
	for i := 0; i < len(a.waiters.list); {
		w := a.waiters.list[i]
		if w.cancelled {
			i++
			continue
		}
		sendIf(ctx, w.sender, &messages.Acquired{Name: w.req.Name, Kind: w.req.Kind, Owner: w.req.Owner,
			RequestID: w.req.RequestID})
		if w.inflight {
			w.cancelled = true
			i++
			continue
		}
		a.waiters.removeAt(i)
	}
}

// wake makes the first n waiters due for an attempt (or, in flight, for
// another one should theirs be refused).
func (a *countActor) wake(n int) {
	for _, w := range a.waiters.list[:min(n, len(a.waiters.list))] {
		wake(w)
	}
}

// pump starts the next Redis request if none is in flight: an undo first,
// then the first waiter due for an attempt.
func (a *countActor) pump(ctx actor.Context) {
	if a.inflight != nil {
		return
	}
	if len(a.ops) > 0 {
		o := a.ops[0]
		a.ops = a.ops[1:]
		a.start(ctx, o)
		return
	}
	for _, w := range a.waiters.list {
		if w.ready && !w.cancelled {
			a.start(ctx, &countOp{w: w})
			return
		}
	}
}

// start runs o on the engine's workers; the result comes back as countDone.
func (a *countActor) start(ctx actor.Context, o *countOp) {
	a.inflight = o
	if !o.undo {
		o.w.inflight = true
	}
	cfg, name, kind := a.refs.cfg, a.key.Name, a.key.Kind
	req, permitIDs := o.w.req, o.w.permitIDs
	sys, self := ctx.ActorSystem(), ctx.Self()
	a.calls.Add(1)
	cfg.Workers.Schedule(func() {
		defer a.calls.Done()
		c, cancel := cfg.ioContext()
		defer cancel()
		d := &countDone{op: o}
		rs := cfg.ReplicaSync
		switch {
		case o.undo:
			// An undo gives permits back: it must run even while Close
			// cancels the engine's calls.
			uc, ucancel := cfg.detachedContext(redisio.IOTimeout)
			d.err = a.undo(uc, o.w)
			ucancel()
		case kind == messages.KindCountDownLatch:
			var n int64
			n, d.err = redisio.LatchCount(c, cfg.Redis, name)
			d.acquired = n <= 0
		case kind == messages.KindSemaphore:
			d.acquired, _, _, d.err = cfg.Scripts.SemaphoreAcquire(c, cfg.Redis, rs, name, req.RequestID, req.Permits)
		default:
			var res redisio.PermitResult
			res, _, d.err = cfg.Scripts.PermitAcquireMany(c, cfg.Redis, rs, name, permitIDs, req.Lease, cfg.Clock.Now())
			d.acquired, d.next = res.Acquired, res.NextExpiry
		}
		sys.Root.Send(self, d)
	})
}

// closingUndoTimeout bounds a give-back or undo run while the engine stops.
const closingUndoTimeout = time.Second

// undo gives back what w's acquire may have taken. It reads only what
// never changes (config, w's request and permit ID), so it may run off the
// actor.
func (a *countActor) undo(c context.Context, w *waiter) error {
	cfg, name := a.refs.cfg, a.key.Name
	switch a.key.Kind {
	case messages.KindSemaphore:
		_, err := cfg.Scripts.SemaphoreUndoAcquire(c, cfg.Redis, name, w.req.RequestID)
		return err
	case messages.KindPermitSemaphore:
		_, err := cfg.Scripts.PermitUndoAcquireMany(c, cfg.Redis, name, w.permitIDs, cfg.Clock.Now())
		return err
	}
	return nil // a latch await takes nothing
}

// undoLeft gives back, at once, what the queued undos and the attempt in
// flight (whose answer will not be read) may have taken: the actor is
// stopping. Its Redis call has finished (stopCalls) before this runs; an
// undo that was that call has run. One bound covers them all, so a Redis
// that does not answer holds the stop up once, not once per undo.
func (a *countActor) undoLeft() {
	left := make([]*waiter, 0, len(a.ops)+1)
	for _, o := range a.ops {
		left = append(left, o.w)
	}
	if o := a.inflight; o != nil && !o.undo {
		left = append(left, o.w)
	}
	if len(left) == 0 {
		return
	}
	c, cancel := a.refs.cfg.detachedContext(closingUndoTimeout)
	defer cancel()
	for _, w := range left {
		if err := a.undo(c, w); err != nil {
			a.refs.cfg.Logger.Warn("warden: could not give back permits while stopping",
				slog.String("name", a.key.Name), slog.Any("err", err))
		}
	}
}

func (a *countActor) onDone(ctx actor.Context, d *countDone) {
	a.inflight = nil
	w := d.op.w
	if d.op.undo {
		if d.err != nil {
			a.refs.cfg.Logger.Warn("warden: could not give back permits of an uncertain acquire",
				slog.String("name", a.key.Name), slog.Any("err", d.err))
		}
		return
	}
	w.inflight = false
	if d.acquired && a.refs.cfg.IO.Err() != nil {
		// The engine is closing: nobody will keep what this took. Give it
		// back as an attempt with an unknown outcome is.
		d.acquired, d.err = false, messages.ErrClosed
	}
	switch {
	case d.err != nil:
		// Unknown outcome: give back what the attempt may have taken.
		a.waiters.remove(w)
		if a.key.Kind != messages.KindCountDownLatch {
			a.ops = append(a.ops, &countOp{w: w, undo: true})
		}
		if !w.cancelled {
			a.replyFailed(ctx, w, a.refs.cfg.closedOr(d.err))
		}
	case d.acquired:
		a.waiters.remove(w)
		if w.cancelled {
			if a.key.Kind != messages.KindCountDownLatch {
				a.ops = append(a.ops, &countOp{w: w, undo: true}) // the requester left meanwhile
			}
			break
		}
		ok := &messages.Acquired{Name: w.req.Name, Kind: w.req.Kind, Owner: w.req.Owner, RequestID: w.req.RequestID}
		if len(w.permitIDs) > 0 {
			ok.PermitID = w.permitIDs[0]
		}
		if len(w.permitIDs) > 1 {
			ok.PermitIDs = w.permitIDs
		}
		sendIf(ctx, w.sender, ok)
		a.waiters.wakeHead() // there may be more to take
	case w.cancelled:
		a.waiters.remove(w)
	case w.try || (!w.req.Deadline.IsZero() && !a.refs.cfg.Clock.Now().Before(w.req.Deadline)):
		a.waiters.remove(w)
		a.replyFailed(ctx, w, messages.ErrTimeout)
	case w.woken:
		w.woken = false
	default:
		w.ready, w.refused = false, true
		wait := a.refs.cfg.Watchdog / 3
		if d.next > 0 {
			wait = min(wait, d.next)
		}
		w.wakeAt = a.refs.cfg.Clock.Now().Add(wait)
	}
}

// onTick fails waiters whose deadline passed and makes the head due when
// its look-again time came.
func (a *countActor) onTick(ctx actor.Context) {
	now := a.refs.cfg.Clock.Now()
	for _, w := range a.waiters.expire(now) {
		a.replyFailed(ctx, w, messages.ErrTimeout)
	}
	a.waiters.wakeDue(now, false)
}

// settle re-arms the timer, keeps the subscription while anyone was
// refused, and arms the idle timer when there is nothing to do.
func (a *countActor) settle(ctx actor.Context) {
	a.timer.set(ctx, a.refs.cfg.Clock, a.waiters.next(false))
	want := false
	for _, w := range a.waiters.list {
		if w.refused && !w.cancelled {
			want = true
			break
		}
	}
	if want != a.subscribed {
		a.subscribed = want
		if want {
			ctx.Send(a.refs.subscriber, &subscribe{Channel: a.channel, PID: ctx.Self()})
		} else {
			ctx.Send(a.refs.subscriber, &unsubscribe{Channel: a.channel, PID: ctx.Self()})
		}
	}
	a.idle.track(ctx, a.refs.idle, a.isIdle(), a.refs.cfg.IdleTimeout)
}

func (a *countActor) isIdle() bool {
	return len(a.waiters.list) == 0 && len(a.ops) == 0 && a.inflight == nil && !a.subscribed
}

// fail handles a panic in Receive (a bug): every waiter is told, and root
// is asked to stop the actor; until then every request gets the fault.
func (a *countActor) fail(ctx actor.Context, r any) {
	a.failWith(r, "warden: count actor failed; its waiters are told")
	if a.subscribed {
		a.subscribed = false
		ctx.Send(a.refs.subscriber, &unsubscribe{Channel: a.channel, PID: ctx.Self()})
	}
	a.answerAll(ctx, a.fault)
	a.retire(ctx)
}

// retire asks root, by way of the subscriber, to stop the failed count
// actor once it received every request sent to it.
func (a *countActor) retire(ctx actor.Context) {
	retireVia(ctx, a.refs.root, a.key, a.seen, a.refs.subscriber)
}

// receiveFailed answers a request reaching a failed count actor and
// retires again: root may be waiting for it (rootActor.onRetire).
func (a *countActor) receiveFailed(ctx actor.Context) {
	if a.answerFailed(ctx) {
		a.retire(ctx)
	}
}

// answerAll gives back what is left to undo (undoLeft), answers every
// waiter with err and forgets them.
func (a *countActor) answerAll(ctx actor.Context, err error) {
	a.undoLeft()
	a.answerWaiters(ctx, err)
	a.ops, a.inflight = nil, nil
}
