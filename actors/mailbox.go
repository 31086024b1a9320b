package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
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
	// pass is m.process, made once.
	pass func()
}

var _ actor.Mailbox = (*queueMailbox)(nil)

func newQueueMailbox() actor.Mailbox {
	m := &queueMailbox{}
	m.pass = m.process
	return m
}

// PostUserMessage queues msg and schedules a pass.
func (m *queueMailbox) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user.push(msg)
	m.mu.Unlock()
	m.userCount.Add(1)
	m.schedule()
}

// PostSystemMessage queues msg and schedules a pass.
func (m *queueMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.sys.push(msg)
	m.mu.Unlock()
	m.sysCount.Add(1)
	m.schedule()
}

// RegisterHandlers sets who handles the messages and where passes run.
func (m *queueMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

// Start does nothing: the mailbox has no middlewares to tell.
func (m *queueMailbox) Start() {}

// UserMessageCount is the number of user messages queued.
func (m *queueMailbox) UserMessageCount() int { return int(m.userCount.Load()) }

// schedule starts a pass unless one is scheduled or running.
func (m *queueMailbox) schedule() {
	if m.scheduled.CompareAndSwap(false, true) {
		m.dispatcher.Schedule(m.pass)
	}
}

// process runs passes until the queues hold nothing it may take: a
// message posted while a pass was ending is either taken by another pass
// here or has scheduled one itself.
func (m *queueMailbox) process() {
	for {
		m.run()
		m.scheduled.Store(false)
		if m.sysCount.Load() == 0 && (m.suspended.Load() || m.userCount.Load() == 0) {
			return
		}
		if !m.scheduled.CompareAndSwap(false, true) {
			return // a post scheduled the next pass
		}
	}
}

// run hands the queued messages to the invoker, system messages first,
// until the queues are empty or the mailbox is suspended.
func (m *queueMailbox) run() {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	throughput := m.dispatcher.Throughput()
	for i := 0; ; i++ {
		if i > throughput {
			i = 0
			runtime.Gosched()
		}
		if msg = m.pop(&m.sys, &m.sysCount); msg != nil {
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
		if m.suspended.Load() {
			return
		}
		if msg = m.pop(&m.user, &m.userCount); msg == nil {
			return
		}
		m.invoker.InvokeUserMessage(msg)
	}
}

// pop takes q's first message (nil when q is empty).
func (m *queueMailbox) pop(q *msgQueue, count *atomic.Int32) any {
	m.mu.Lock()
	msg := q.pop()
	m.mu.Unlock()
	if msg != nil {
		count.Add(-1)
	}
	return msg
}

// maxKeptQueue is the longest queue slice kept for reuse once emptied.
const maxKeptQueue = 1024

// msgQueue is a FIFO of messages on one slice, reused once emptied.
type msgQueue struct {
	items []any
	head  int
}

func (q *msgQueue) push(msg any) { q.items = append(q.items, msg) }

func (q *msgQueue) pop() any {
	if q.head == len(q.items) {
		return nil
	}
	msg := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if cap(q.items) > maxKeptQueue {
			q.items = nil // a burst's slice is not kept for ever
		}
	}
	return msg
}
