package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// withMailbox is the props option of every engine actor: its mailbox is a
// queueMailbox.
var withMailbox = actor.WithMailbox(newQueueMailbox)

// queueMailbox is the engine actors' mailbox. It behaves as protoactor's
// default (unbounded) mailbox does: system messages before user messages,
// user messages held while suspended, one pass at a time on the
// dispatcher, at most Throughput messages between yields, a panic handed
// to the invoker. Unlike the default one it does not allocate to schedule
// a pass (the default makes a method value on every schedule: about nine
// allocations a lock+unlock pair), and a message does not allocate once
// its queue has grown to the mailbox's usual depth. Message batches are
// not unpacked: the engine sends none.
type queueMailbox struct {
	mu        sync.Mutex
	sys, user msgQueue
	// sysCount and userCount are the messages queued, read without mu.
	sysCount, userCount atomic.Int32
	// scheduled is set from a schedule until the pass ends and finds
	// nothing more to do.
	scheduled  atomic.Bool
	suspended  atomic.Bool
	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
	// inline tells that a pass may run on the goroutine that posts to the
	// idle mailbox (Workers.runsInline) instead of on a worker.
	inline bool
}

var _ actor.Mailbox = (*queueMailbox)(nil)

func newQueueMailbox() actor.Mailbox { return &queueMailbox{} }

// PostUserMessage queues msg and schedules a pass.
func (m *queueMailbox) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user.push(msg)
	m.mu.Unlock()
	m.userCount.Add(1)
	m.schedule(m.inline && inlineMessage(msg))
}

// PostSystemMessage queues msg and schedules a pass.
func (m *queueMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.sys.push(msg)
	m.mu.Unlock()
	m.sysCount.Add(1)
	m.schedule(false)
}

// RegisterHandlers sets who handles the messages and where passes run.
func (m *queueMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
	w, ok := dispatcher.(*Workers)
	m.inline = ok && w.runsInline()
}

// Start does nothing: the mailbox has no middlewares to tell.
func (m *queueMailbox) Start() {}

// UserMessageCount is the number of user messages queued.
func (m *queueMailbox) UserMessageCount() int { return int(m.userCount.Load()) }

// schedule starts a pass unless one is scheduled or running. With inline
// (the dispatcher allows it and the message is one inlineMessage names)
// the pass runs right here, on the posting goroutine: the message is
// handled without waking another goroutine. That goroutine then runs the
// actor's turn (one turn at a time still: scheduled stays set until the
// pass ends), nested in its own turn when it is another actor's; the
// nesting is as deep as a chain of distinct actors, each holding its own
// mailbox's flag, can be. An inline pass takes no system message, no user
// message inlineMessage does not name (one queued behind the request it
// runs) and at most the dispatcher's Throughput of messages: the rest of
// the pass goes to the dispatcher (run).
func (m *queueMailbox) schedule(inline bool) {
	if m.scheduled.CompareAndSwap(false, true) {
		if inline {
			m.passes(true)
			return
		}
		m.dispatchPass()
	}
}

// inlineMessage tells the messages whose post may run an idle mailbox's
// pass on the posting goroutine: the requests of package messages, the
// engine's own messages on a request's path and the pub/sub reader's
// events (the subscriber's fan-out of an unlock message then runs on the
// reader, and the key actors' turns it posts nested in it, instead of on a
// worker woken for it), none of whose turns waits for anything. A stop, a
// failure's clean-up and a passivation wait for the actor's Redis call in
// their turn, which the goroutine that posted must not: every other
// message goes to a worker. (A panic in one of these turns, a bug, fails a
// key actor there, and its clean-up then waits for the actor's call,
// within the call's bound, on the poster.)
func inlineMessage(msg any) bool {
	if e, ok := msg.(*actor.MessageEnvelope); ok {
		msg = e.Message
	}
	switch msg.(type) {
	case *messages.Acquire, *messages.Release, *messages.Cancel, *messages.Extend, *messages.Watch,
		*opDone, *register, *unregister, *pause, *unlocked, *subscribed, *pubsubEvent:
		return true
	}
	return false
}

// dispatchPass hands a pass to the dispatcher. The engine's Workers take
// the mailbox itself as the job (run), which costs no allocation; another
// dispatcher takes a method value.
func (m *queueMailbox) dispatchPass() {
	if w, ok := m.dispatcher.(*Workers); ok {
		w.run(m)
		return
	}
	m.dispatcher.Schedule(m.run)
}

// run runs the passes of a pass handed to the dispatcher (a job of the
// Workers).
func (m *queueMailbox) run() { m.passes(false) }

// passes runs passes until the queues hold nothing it may take: a
// message posted while a pass was ending is either taken by another pass
// here or has scheduled one itself. An inline pass that meets a system
// message hands the rest to the dispatcher.
func (m *queueMailbox) passes(inline bool) {
	for {
		if !m.take(inline) {
			m.dispatchPass() // scheduled stays set: the worker's pass takes over
			return
		}
		m.scheduled.Store(false)
		if m.sysCount.Load() == 0 && (m.suspended.Load() || m.userCount.Load() == 0) {
			return
		}
		if !m.scheduled.CompareAndSwap(false, true) {
			return // a post scheduled the next pass
		}
	}
}

// take hands the queued messages to the invoker, system messages first,
// until the queues are empty or the mailbox is suspended, yielding every
// Throughput messages. It returns false for the rest of the pass to go to
// the dispatcher: when an inline run meets a system message or a user
// message inlineMessage does not name, or has taken Throughput messages
// (the posting goroutine serves no actor's backlog), and after a panic,
// which the invoker was told of.
func (m *queueMailbox) take(inline bool) bool {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	throughput := m.dispatcher.Throughput()
	var only func(any) bool // the user messages this pass may take; nil: any
	if inline {
		only = inlineMessage
	}
	for i := 0; ; i++ {
		if i > throughput {
			if inline {
				return false
			}
			i = 0
			runtime.Gosched()
		}
		if inline && m.sysCount.Load() > 0 {
			return false
		}
		// An inline pass never takes a system message, even one queued
		// since the check above (its count is added after it is queued,
		// and its post then finds this pass's flag set, or schedules one).
		if !inline {
			if msg, _ = m.pop(&m.sys, &m.sysCount, nil); msg != nil {
				switch msg.(type) {
				case *actor.SuspendMailbox:
					m.suspended.Store(true)
				case *actor.ResumeMailbox:
					m.suspended.Store(false)
				default:
					m.invoker.InvokeSystemMessage(msg)
				}
				continue
			}
		}
		if m.suspended.Load() {
			return true
		}
		// Past the request it runs, an inline pass takes only what
		// inlineMessage names: a poison pill, a passivation's or a
		// failure's message queued behind it has a turn that may wait for
		// the posting goroutine itself (the subscriber's stop for its
		// reader, a key actor's for a call handed to its caller).
		var refused bool
		if msg, refused = m.pop(&m.user, &m.userCount, only); msg == nil {
			return !refused
		}
		m.invoker.InvokeUserMessage(msg)
	}
}

// pop takes q's first message (nil when q is empty). With only set, it
// takes it only when only says so, and otherwise leaves it and tells that
// it refused it.
func (m *queueMailbox) pop(q *msgQueue, count *atomic.Int32, only func(any) bool) (msg any, refused bool) {
	m.mu.Lock()
	if only != nil && q.head < len(q.items) && !only(q.items[q.head]) {
		m.mu.Unlock()
		return nil, true
	}
	msg = q.pop(q == &m.sys)
	m.mu.Unlock()
	if msg != nil {
		count.Add(-1)
	}
	return msg, false
}

// maxKeptQueue is the longest queue slice kept for reuse once emptied.
const maxKeptQueue = 1024

// msgQueue is a FIFO of messages on one slice, reused once emptied.
type msgQueue struct {
	items []any
	head  int
}

func (q *msgQueue) push(msg any) { q.items = append(q.items, msg) }

// pop takes q's first message (nil when q is empty). Once emptied, q
// keeps its slice for the next messages unless system is set (the system
// queue, whose messages, start, stop and failures, are few) or the
// message was an idle actor's (givesBackRoom).
func (q *msgQueue) pop(system bool) any {
	if q.head == len(q.items) {
		return nil
	}
	msg := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if cap(q.items) > maxKeptQueue || system || givesBackRoom(msg) {
			q.items = nil // a burst's slice is not kept for ever
		}
	}
	return msg
}

// givesBackRoom tells whether msg, the last message of its queue, is an
// idle actor's: an idle tick. The queue then lets go of its slice, which
// an idle name would otherwise keep (16 bytes a message it ever queued at
// once) until it is passivated; the next message makes one anew.
func givesBackRoom(msg any) bool {
	_, ok := msg.(*idleTick)
	return ok
}
