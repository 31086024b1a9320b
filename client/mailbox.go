package client

import (
	"errors"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
)

// mailbox is the client's one reply address in the actor system: a Process
// that hands each engine reply to the Go caller waiting for its request ID,
// through a channel the caller can select on together with its context,
// and that turns LockLost into closed Lost() channels. It is the boundary
// between the actor engine and blocking Go callers.
type mailbox struct {
	c       *Client
	mu      sync.Mutex
	pending map[string]chan any
	// spare keeps reply channels whose one reply was received, for the
	// next requests: a channel is put back only by the caller that took
	// its reply out, so no late reply can reach its next user.
	spare sync.Pool
}

var _ actor.Process = (*mailbox)(nil)

// expect registers a caller waiting for the reply to requestID.
func (m *mailbox) expect(requestID string) chan any {
	ch, _ := m.spare.Get().(chan any)
	if ch == nil {
		ch = make(chan any, 1)
	}
	m.mu.Lock()
	m.pending[requestID] = ch
	m.mu.Unlock()
	return ch
}

// forget drops a caller that no longer waits.
func (m *mailbox) forget(requestID string) {
	m.mu.Lock()
	delete(m.pending, requestID)
	m.mu.Unlock()
}

// recycle keeps ch, whose reply its caller has received, for a later
// request. The mailbox sends at most one reply on a channel (it takes the
// channel out of pending before sending), so once that reply is out the
// channel is empty and nobody else holds it.
func (m *mailbox) recycle(ch chan any) {
	m.spare.Put(ch)
}

func (m *mailbox) SendUserMessage(_ *actor.PID, message any) {
	var id string
	switch r := actor.UnwrapEnvelopeMessage(message).(type) {
	case *messages.Acquired:
		id = r.RequestID
		if r.HoldCount == 1 && r.Holding != 0 && r.Kind.Held() {
			// A holding began, whether or not its caller still waits.
			m.c.tel.holdStarted(holdingKey{r.Name, r.Kind, r.Owner, r.Holding})
		}
	case *messages.AcquireFailed:
		id = r.RequestID
	case *messages.Released:
		id = r.RequestID
		if r.Remaining == 0 {
			// The holding ended, whether or not its caller still waits.
			k := holdingKey{r.Name, r.Kind, r.Owner, r.Holding}
			m.c.unwatchLost(k)
			m.c.tel.holdEnded(k, endReleased)
		}
	case *messages.ReleaseFailed:
		id = r.RequestID
		if errors.Is(r.Err, messages.ErrNotHeld) && r.Holding != 0 {
			k := holdingKey{r.Name, r.Kind, r.Owner, r.Holding}
			m.c.unwatchLost(k)
			m.c.tel.holdEnded(k, endLost) // gone before its unlock
		}
	case *messages.Extended:
		id = r.RequestID
	case *messages.ExtendFailed:
		id = r.RequestID
	case *messages.LockLost:
		m.c.onLockLost(r)
		m.c.tel.holdEnded(holdingKey{r.Name, r.Kind, r.Owner, r.Holding}, endLost)
		return
	default:
		return
	}
	reply := actor.UnwrapEnvelopeMessage(message)
	if a, ok := reply.(*messages.Acquired); ok && a.Kind == messages.KindFencedLock {
		if highest, ok := m.c.fences.admit(a); !ok {
			reply = &backwardsError{acquired: a, highest: highest}
		}
	}
	m.mu.Lock()
	ch := m.pending[id]
	delete(m.pending, id)
	m.mu.Unlock()
	if ch != nil {
		ch <- reply
	}
}

func (m *mailbox) SendSystemMessage(*actor.PID, any) {}

func (m *mailbox) Stop(*actor.PID) {}
