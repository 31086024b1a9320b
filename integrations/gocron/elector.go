package wardengocron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	"github.com/warden-go/warden/messages"
)

var _ gocron.Elector = (*Elector)(nil)

// Elector is a gocron.Elector on a warden election: it campaigns in the
// background for as long as it is open, campaigning again whenever its term
// ends, and IsLeader answers nil while it leads. Schedulers that share an
// election run their jobs on its leader only; when the leader's process
// stops (Close resigns at once; a crash frees the lock within the watchdog
// timeout), another takes over.
type Elector struct {
	e      *election.Election
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewElector starts campaigning in e with value (see
// election.Election.Campaign). Close it when done.
func NewElector(e *election.Election, value string) (*Elector, error) {
	if e == nil {
		return nil, messages.Invalid("election", "nil")
	}
	if value == "" {
		return nil, messages.Invalid("value", "empty")
	}
	ctx, cancel := context.WithCancel(context.Background())
	el := &Elector{e: e, cancel: cancel, done: make(chan struct{})}
	go el.campaign(ctx, value)
	return el, nil
}

// campaign campaigns until ctx ends, again after every term, and after a
// failed campaign (Redis unreachable) a second later; it stops for good
// once the Client is closed (the Elector then never leads).
func (el *Elector) campaign(ctx context.Context, value string) {
	defer close(el.done)
	for {
		err := el.e.Campaign(ctx, value)
		if ctx.Err() != nil || errors.Is(err, client.ErrClosed) || errors.Is(err, client.ErrInvalidArgument) {
			return // nothing to wait for: no later campaign can succeed
		}
		if err != nil && !errors.Is(err, election.ErrAlreadyLeader) {
			t := time.NewTimer(time.Second)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		// Lost, then IsLeader: a term that ended before Lost was taken
		// reads as not leading, and one that ends after closes wait.
		wait := el.e.Lost()
		if !el.e.IsLeader() {
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return
		}
	}
}

// IsLeader returns nil while the Elector's candidate leads, and an error
// matching election.ErrNotLeader otherwise.
func (el *Elector) IsLeader(context.Context) error {
	if el == nil {
		return messages.Invalid("elector", "nil")
	}
	if !el.e.IsLeader() {
		return fmt.Errorf("%w: %s", election.ErrNotLeader, el.e.Name())
	}
	return nil
}

// Close stops campaigning and resigns if the candidate leads, so that
// another takes over at once. It returns Resign's error; calls after the
// first return nil.
func (el *Elector) Close(ctx context.Context) error {
	if el == nil {
		return messages.Invalid("elector", "nil")
	}
	if ctx == nil {
		return messages.Invalid("ctx", "nil context")
	}
	first := false
	el.once.Do(func() { first = true })
	if !first {
		return nil
	}
	el.cancel()
	<-el.done
	return el.e.Resign(ctx)
}
