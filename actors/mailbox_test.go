package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/messages"
)

// recordingInvoker records what a mailbox hands it, in order.
type recordingInvoker struct {
	mu        sync.Mutex
	got       []any
	escalated []any
	active    int // passes running now, to catch two at once
	overlap   bool
	panicOn   any
}

func (r *recordingInvoker) record(msg any) {
	r.mu.Lock()
	r.active++
	if r.active > 1 {
		r.overlap = true
	}
	r.got = append(r.got, msg)
	r.mu.Unlock()
	if msg == r.panicOn && msg != nil {
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
		panic("boom")
	}
	r.mu.Lock()
	r.active--
	r.mu.Unlock()
}

func (r *recordingInvoker) InvokeSystemMessage(msg any) { r.record(msg) }
func (r *recordingInvoker) InvokeUserMessage(msg any)   { r.record(msg) }
func (r *recordingInvoker) EscalateFailure(reason, msg any) {
	r.mu.Lock()
	r.escalated = append(r.escalated, msg)
	r.mu.Unlock()
}

func (r *recordingInvoker) snapshot() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.got...)
}

// heldDispatcher runs passes only when told, so a test sees the order a
// pass takes queued messages in.
type heldDispatcher struct{ passes []func() }

func (d *heldDispatcher) Schedule(fn func()) { d.passes = append(d.passes, fn) }
func (d *heldDispatcher) Throughput() int    { return 300 }

func (d *heldDispatcher) runAll() {
	for len(d.passes) > 0 {
		fn := d.passes[0]
		d.passes = d.passes[1:]
		fn()
	}
}

func TestQueueMailboxOrderAndSuspension(t *testing.T) {
	inv, d := &recordingInvoker{}, &heldDispatcher{}
	m := newQueueMailbox()
	m.RegisterHandlers(inv, d)
	m.PostUserMessage("u1")
	m.PostUserMessage("u2")
	m.PostSystemMessage("s1")
	assert.Len(t, d.passes, 1, "one pass scheduled for three posts")
	assert.Equal(t, 2, m.UserMessageCount())
	d.runAll()
	assert.Equal(t, []any{"s1", "u1", "u2"}, inv.snapshot(), "system messages first, then user messages in order")
	assert.Zero(t, m.UserMessageCount())

	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage("u3")
	d.runAll()
	assert.Len(t, inv.snapshot(), 3, "a suspended mailbox holds user messages")
	m.PostSystemMessage("s2")
	d.runAll()
	assert.Equal(t, []any{"s1", "u1", "u2", "s2"}, inv.snapshot(), "but not system messages")
	m.PostSystemMessage(&actor.ResumeMailbox{})
	d.runAll()
	assert.Equal(t, []any{"s1", "u1", "u2", "s2", "u3"}, inv.snapshot(), "resumed: the held message comes")
	assert.Empty(t, d.passes)
}

func TestQueueMailboxEscalatesAPanicAndGoesOn(t *testing.T) {
	inv, d := &recordingInvoker{panicOn: "bad"}, &heldDispatcher{}
	m := newQueueMailbox()
	m.RegisterHandlers(inv, d)
	m.PostUserMessage("bad")
	m.PostUserMessage("next")
	d.runAll()
	assert.Equal(t, []any{"bad"}, inv.escalated)
	m.PostUserMessage("later")
	d.runAll()
	assert.Equal(t, []any{"bad", "next", "later"}, inv.snapshot(), "messages after the panic still come")
}

// sysMsg is a system message of TestQueueMailboxConcurrentPosts.
type sysMsg [2]int

// Many goroutines posting at once, passes on goroutines of their own: every
// message comes exactly once, each poster's in its order, and never two
// passes at once.
func TestQueueMailboxConcurrentPosts(t *testing.T) {
	inv := &recordingInvoker{}
	w := NewWorkers()
	defer w.Stop()
	m := newQueueMailbox()
	m.RegisterHandlers(inv, w)
	const posters, each = 8, 2000
	var wg sync.WaitGroup
	for p := range posters {
		wg.Go(func() {
			for i := range each {
				if i%50 == 0 {
					m.PostSystemMessage(sysMsg{p, i})
				}
				m.PostUserMessage([2]int{p, i})
			}
		})
	}
	wg.Wait()
	want := posters * (each + each/50)
	require.Eventually(t, func() bool { return len(inv.snapshot()) == want }, 10*time.Second, time.Millisecond,
		"every message handed over")
	got := inv.snapshot()
	last := make([]int, posters)
	for i := range last {
		last[i] = -1
	}
	for _, v := range got {
		pm, ok := v.([2]int)
		if !ok {
			continue // a system message
		}
		assert.Greater(t, pm[1], last[pm[0]], "poster %d's messages in order", pm[0])
		last[pm[0]] = pm[1]
	}
	for p, l := range last {
		assert.Equal(t, each-1, l, "poster %d's last message", p)
	}
	inv.mu.Lock()
	assert.False(t, inv.overlap, "never two passes at once")
	inv.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	assert.Len(t, inv.snapshot(), want, "and nothing twice")
}

// funcInvoker hands each message to a function.
type funcInvoker struct{ fn func(msg any) }

func (f funcInvoker) InvokeSystemMessage(msg any) { f.fn(msg) }
func (f funcInvoker) InvokeUserMessage(msg any)   { f.fn(msg) }
func (f funcInvoker) EscalateFailure(any, any)    {}

// postReturns posts msg to m on a goroutine of its own and tells whether
// the post returned within 5 seconds (an inline pass runs in it).
func postReturns(m *queueMailbox, msg any) bool {
	posted := make(chan struct{})
	go func() {
		m.PostUserMessage(msg)
		close(posted)
	}()
	select {
	case <-posted:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// An idle mailbox runs a request's pass on the goroutine that posts it;
// a system message queued meanwhile, and a message inlineMessage does not
// name, go to the workers, so the poster never waits for what their turns
// wait for.
func TestInlinePassRunsOnThePosterButNotItsSystemMessages(t *testing.T) {
	w := NewWorkers()
	defer w.Stop()
	gate := make(chan struct{})
	got := make(chan any, 8)
	m := newQueueMailbox().(*queueMailbox)
	m.RegisterHandlers(funcInvoker{fn: func(msg any) {
		switch msg {
		case "system", "plain":
			<-gate // a turn that waits, as a stop waits for the actor's call
		}
		if a, ok := msg.(*messages.Acquire); ok && a.Name == "then-stop" {
			m.PostSystemMessage("system")
		}
		got <- msg
	}}, w)
	require.True(t, m.inline, "a mailbox on the engine's own workers runs inline passes")

	first := &messages.Acquire{Name: "first"}
	m.PostUserMessage(first)
	select {
	case msg := <-got:
		assert.Same(t, first, msg, "handled before the post returned")
	default:
		t.Fatal("an idle mailbox's request was not handled on the posting goroutine")
	}
	// The pub/sub reader's event: the subscriber fans an unlock message out
	// on the reader's goroutine, without waking a worker for it.
	ev := &pubsubEvent{}
	m.PostUserMessage(ev)
	select {
	case msg := <-got:
		assert.Same(t, ev, msg, "handled before the post returned")
	default:
		t.Fatal("a pub/sub event was not handled on the reader's goroutine")
	}

	returned := make(chan struct{})
	go func() {
		m.PostUserMessage(&messages.Acquire{Name: "then-stop"}) // its turn queues a system message
		m.PostUserMessage("plain")
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		close(gate)
		t.Fatal("a post waited for a system message's turn or a plain message's")
	}
	close(gate)
	var rest []any
	for range 3 {
		rest = append(rest, await.Value(t, got, 5*time.Second, "the next message handled"))
	}
	assert.Equal(t, "then-stop", rest[0].(*messages.Acquire).Name)
	assert.ElementsMatch(t, []any{"system", "plain"}, rest[1:], "both handled, on the workers")
}

// An inline pass that finds, queued behind the request it runs, a message
// inlineMessage does not name (root's poison pill, say) leaves it and what
// follows to the workers: such a turn may wait for the posting goroutine
// itself (the subscriber's stop waits for its pub/sub reader, the goroutine
// that posted the event it runs), so it never runs on it. Order is kept.
func TestInlinePassLeavesAPlainMessageQueuedBehindToTheWorkers(t *testing.T) {
	w := NewWorkers()
	defer w.Stop()
	gate := make(chan struct{})
	got := make(chan any, 4)
	m := newQueueMailbox().(*queueMailbox)
	m.RegisterHandlers(funcInvoker{fn: func(msg any) {
		if msg == "plain" {
			<-gate // a turn that waits, as the subscriber's stop waits for its reader
		}
		if a, ok := msg.(*messages.Acquire); ok && a.Name == "then-plain" {
			m.PostUserMessage("plain") // queued behind: this pass is running
			m.PostUserMessage(&messages.Acquire{Name: "after"})
		}
		got <- msg
	}}, w)
	if !postReturns(m, &messages.Acquire{Name: "then-plain"}) {
		close(gate)
		t.Fatal("the posting goroutine ran a plain message's turn queued behind its request")
	}
	close(gate)
	var names []string
	for range 3 {
		msg := await.Value(t, got, 5*time.Second, "the next message handled")
		if a, ok := msg.(*messages.Acquire); ok {
			names = append(names, a.Name)
		} else {
			names = append(names, msg.(string))
		}
	}
	assert.Equal(t, []string{"then-plain", "plain", "after"}, names, "every message, in order")
}

// A system message queued while an inline pass runs, caught between its
// queueing and its count (PostSystemMessage adds the count after the
// queue's lock), is not taken by that pass: the subscriber's stop, taken so
// on its pub/sub reader's goroutine, waited there for that reader to end,
// for ever (a Client's Close hung in CI). The post then schedules the pass
// that takes it, on a worker.
func TestInlinePassTakesNoSystemMessageQueuedBeforeItsCount(t *testing.T) {
	w := NewWorkers()
	defer w.Stop()
	var poster atomic.Bool // set while the poster's own post runs
	got := make(chan string, 4)
	m := newQueueMailbox().(*queueMailbox)
	m.RegisterHandlers(funcInvoker{fn: func(msg any) {
		if msg == "system" {
			if poster.Load() {
				got <- "system on the poster"
				return
			}
			got <- "system"
			return
		}
		// The window: queued, its count not yet added.
		m.mu.Lock()
		m.sys.push("system")
		m.mu.Unlock()
		got <- "request"
	}}, w)
	poster.Store(true)
	if !postReturns(m, &messages.Acquire{Name: "a"}) {
		t.Fatal("the post did not return")
	}
	poster.Store(false)
	m.sysCount.Add(1) // the rest of PostSystemMessage
	m.schedule(false)
	var seen []string
	for range 2 {
		seen = append(seen, await.Value(t, got, 5*time.Second, "the next message handled"))
	}
	assert.Equal(t, []string{"request", "system"}, seen)
}

// An inline pass takes at most a dispatcher's throughput of messages on
// the posting goroutine: what others keep queueing meanwhile is handed to
// the workers, so a caller never serves an actor's backlog for ever.
func TestInlinePassIsBounded(t *testing.T) {
	w := NewWorkers()
	defer w.Stop()
	const more = 5 * throughput
	var entered, handled atomic.Int64
	gate, all := make(chan struct{}), make(chan struct{})
	m := newQueueMailbox().(*queueMailbox)
	m.RegisterHandlers(funcInvoker{fn: func(msg any) {
		if entered.Add(1) > throughput+1 {
			<-gate // past what the poster may take: held until the poster is back
		}
		if a, ok := msg.(*messages.Acquire); ok && a.Name == "first" {
			for range more {
				m.PostUserMessage(&messages.Acquire{Name: "more"}) // queued: the pass is this one
			}
		}
		if handled.Add(1) == more+1 {
			close(all)
		}
	}}, w)
	if !postReturns(m, &messages.Acquire{Name: "first"}) {
		close(gate)
		t.Fatal("the posting goroutine went on serving the backlog")
	}
	assert.Equal(t, int64(throughput+1), handled.Load(), "the posting goroutine took a throughput's worth, then handed over")
	close(gate)
	select {
	case <-all:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d of %d handled", handled.Load(), more+1)
	}
}
