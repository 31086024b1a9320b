package client

import (
	"github.com/asynkron/protoactor-go/actor"
)

// inbox is a one-shot reply address: a Process in the actor system's
// registry that hands the engine's reply to a waiting Go caller through a
// channel, so the caller can also watch its context.
type inbox struct {
	ch chan any
}

var _ actor.Process = (*inbox)(nil)

func (in *inbox) SendUserMessage(_ *actor.PID, message any) {
	select {
	case in.ch <- actor.UnwrapEnvelopeMessage(message):
	default: // a late duplicate; the caller takes one reply only
	}
}

func (in *inbox) SendSystemMessage(*actor.PID, any) {}

func (in *inbox) Stop(*actor.PID) {}

// lostInbox receives every LockLost of the client's handles and closes the
// lost channel of the holding it names.
type lostInbox struct {
	c *Client
}

var _ actor.Process = (*lostInbox)(nil)

func (l *lostInbox) SendUserMessage(_ *actor.PID, message any) {
	l.c.onLockLost(actor.UnwrapEnvelopeMessage(message))
}

func (l *lostInbox) SendSystemMessage(*actor.PID, any) {}

func (l *lostInbox) Stop(*actor.PID) {}
