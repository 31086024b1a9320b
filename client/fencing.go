package client

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// fencedNames is how many fenced lock names a Client remembers the
// highest token of: the most recently acquired ones (see fences).
const fencedNames = 100_000

// fences keeps, for each fenced lock name, the highest token the Client
// has handed out, so that it never hands out a lower one (or the same one
// twice), whatever happened to the counter in Redis: an eviction, a
// restart without data, a failover to a replica that missed increments.
// It holds one entry per name for the limit (fencedNames when 0) most
// recently acquired names, and forgets the least recently acquired one
// past that, so that a Client that acquires ever new names stays bounded
// (about 90 bytes a name beside the name's text: some 9 MB at the
// bound). The mailbox consults it as the engine's answers arrive, which
// they do in the order the name's key actor sent them.
type fences struct {
	mu    sync.Mutex
	limit int
	names map[string]*list.Element // of *fence, in order
	order list.List                // of *fence, most recently acquired first
}

// fence is one name's entry in fences.
type fence struct {
	name    string
	highest int64
}

// admit checks the token of a fenced lock's Acquired: a first acquire of
// a holding (HoldCount 1) must have a token above every token handed out
// for the name before, a reentry at least the highest (its holding's own).
// It records an admitted token, the name then the most recently acquired,
// and returns, for one it refuses, the highest handed out.
func (f *fences) admit(a *messages.Acquired) (highest int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.names[a.Name]
	if e != nil {
		highest = e.Value.(*fence).highest
	}
	if a.Token < highest || (a.Token == highest && a.HoldCount <= 1 && highest != 0) {
		return highest, false
	}
	if e != nil {
		e.Value.(*fence).highest = a.Token
		f.order.MoveToFront(e)
		return highest, true
	}
	if f.names == nil {
		f.names = map[string]*list.Element{}
	}
	f.names[a.Name] = f.order.PushFront(&fence{a.Name, a.Token})
	limit := f.limit
	if limit <= 0 {
		limit = fencedNames
	}
	for f.order.Len() > limit {
		delete(f.names, f.order.Remove(f.order.Back()).(*fence).name)
	}
	return highest, true
}

// below reports, for a token read from Redis (Token), the highest token
// handed out for name when the token is lower.
func (f *fences) below(name string, token int64) (highest int64, lower bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.names[name]; e != nil {
		highest = e.Value.(*fence).highest
	}
	return highest, token < highest
}

// backwardsError is what the mailbox hands the waiter of a fenced lock's
// Acquired whose token fences refused, in place of the Acquired: the hold
// was taken in Redis, and the waiter raises the counter back to the
// highest token handed out and gives the hold back (Lock.acquire), then
// returns the error, which matches ErrFencingReset. Token returns one too,
// with acquired nil, for a counter it read lower than that.
type backwardsError struct {
	acquired *messages.Acquired // nil: Token's read
	name     string             // Token's: the lock's name
	read     int64              // Token's: the counter read
	highest  int64
	raised   error // the raise's error, if it failed
	released error // the give-back's error, if it failed
}

func (e *backwardsError) Error() string {
	name, what := e.name, fmt.Sprintf("the counter reads %d", e.read)
	if e.acquired != nil {
		name, what = e.acquired.Name, fmt.Sprintf("the acquire got token %d", e.acquired.Token)
	}
	msg := fmt.Sprintf("warden: fenced lock %s: fencing token counter went backwards: %s, "+
		"this Client handed out %d before (the counter %s was evicted, or lost in a restart or failover)",
		name, what, e.highest, redisio.TokenKey(name))
	if e.raised == nil {
		msg += fmt.Sprintf("; the counter was raised to %d, so the next acquire from any Client gets a higher token", e.highest)
	} else {
		msg += fmt.Sprintf("; raising the counter to %d failed (%s), so acquires may fail this way again", e.highest, bare(e.raised))
	}
	if e.acquired != nil {
		msg += "; the acquire was given back"
	}
	if e.released != nil {
		msg += " (give-back failed: " + bare(e.released).Error() + "; the hold expires within its lease)"
	}
	return msg
}

func (e *backwardsError) Unwrap() []error {
	errs := []error{ErrFencingReset}
	if e.raised != nil {
		errs = append(errs, e.raised)
	}
	if e.released != nil {
		errs = append(errs, e.released)
	}
	return errs
}

// acquiredIn returns the Acquired a reply carries, if any: the reply
// itself, or the one a backwardsError holds.
func acquiredIn(reply any) (*messages.Acquired, bool) {
	switch r := reply.(type) {
	case *messages.Acquired:
		return r, true
	case *backwardsError:
		return r.acquired, true
	}
	return nil, false
}
