package client

import (
	"fmt"
	"strings"
	"sync"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// fences keeps, for each fenced lock name, the highest token the Client
// has handed out, so that it never hands out a lower one (or the same one
// twice), whatever happened to the counter in Redis: an eviction, a
// restart without data, a failover to a replica that missed increments.
// It holds one entry per fenced lock name the Client has acquired. The
// mailbox consults it as the engine's answers arrive, which they do in
// the order the name's key actor sent them.
type fences struct {
	mu      sync.Mutex
	highest map[string]int64
}

// admit checks the token of a fenced lock's Acquired: a first acquire of
// a holding (HoldCount 1) must have a token above every token handed out
// for the name before, a reentry at least the highest (its holding's own).
// It records an admitted token and returns, for one it refuses, the
// highest handed out.
func (f *fences) admit(a *messages.Acquired) (highest int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	highest = f.highest[a.Name]
	if a.Token < highest || (a.Token == highest && a.HoldCount <= 1 && highest != 0) {
		return highest, false
	}
	if f.highest == nil {
		f.highest = map[string]int64{}
	}
	f.highest[a.Name] = a.Token
	return highest, true
}

// below reports, for a token read from Redis (Token), the highest token
// handed out for name when the token is lower.
func (f *fences) below(name string, token int64) (highest int64, lower bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	highest = f.highest[name]
	return highest, token < highest
}

// backwardsError is what the mailbox hands the waiter of a fenced lock's
// Acquired whose token fences refused, in place of the Acquired: the hold
// was taken in Redis, and the waiter gives it back (Lock.acquire) and
// returns the error, which matches ErrFencingReset.
type backwardsError struct {
	acquired *messages.Acquired
	highest  int64
	released error // the give-back's error, if it failed
}

func (e *backwardsError) Error() string {
	name := e.acquired.Name
	msg := fmt.Sprintf("warden: fenced lock %s: fencing token counter went backwards: the acquire got token %d, "+
		"this Client handed out %d before (the counter %s was evicted, or lost in a restart or failover); the acquire was given back",
		name, e.acquired.Token, e.highest, redisio.TokenKey(name))
	if e.released != nil {
		msg += " (give-back failed: " + strings.TrimPrefix(e.released.Error(), "warden: ") + "; the hold expires within its lease)"
	}
	return msg
}

func (e *backwardsError) Unwrap() []error {
	if e.released != nil {
		return []error{ErrFencingReset, e.released}
	}
	return []error{ErrFencingReset}
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
