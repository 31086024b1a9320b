package redisio

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handoff is one round trip that releases the last hold of one owner and
// tries to acquire the lock for the next, as one pipeline on one
// connection: the unlock script, then the acquire script. The unlock
// publishes as usual, so other processes' waiters wake and compete; the
// acquire, right behind it on the connection, usually wins. Each script
// keeps its own exactly-once latch, so a retried or replayed handoff
// answers as the two calls would.
type Handoff struct {
	Name string
	// Args, when set, are Name's arguments (Scripts.LockArgs), kept by the
	// caller; otherwise they are made for the call.
	Args *LockArgs
	// Fenced selects the fenced lock's acquire (with its token counter).
	Fenced bool
	// From releases one hold; its lease refreshes a lock it still holds.
	From, FromReqID string
	FromLease       time.Duration
	// To acquires with lease ToLease.
	To, ToReqID string
	ToLease     time.Duration
}

// HandoffResult is a Handoff's two outcomes: the unlock's (as Unlock
// returns them) and the acquire's (as AcquireSynced returns them).
type HandoffResult struct {
	Remaining int
	Held      bool
	UnlockErr error

	Acquire    AcquireResult
	AcquireErr error
}

// Handoff runs h (see Handoff).
func (s *Scripts) Handoff(ctx context.Context, r Redis, h Handoff) HandoffResult {
	args := h.Args
	if args == nil {
		args = s.LockArgs(h.Name)
	}
	u := s.unlockCall(args, h.From, h.FromReqID, h.FromLease, s.publishArg)
	defer u.free()
	a := s.acquireCall(args, h.To, h.ToReqID, h.ToLease, h.Fenced, false)
	defer a.free()
	// r.Pipeline is the wrapped client's also on an AutoPipeline: one
	// connection for both, in order.
	var unlock, acquire *redis.Cmd
	pipelineScripts(ctx, r, func(pipe redis.Pipeliner, eval evalFunc) {
		unlock = eval(unlockScript.Script, ctx, pipe, u.keys(), u.argv()...)
		acquire = eval(acquireScript.Script, ctx, pipe, a.keys(), a.argv()...)
	})
	var res HandoffResult
	res.Remaining, res.Held, res.UnlockErr = unlockReply("unlock", h.Name, unlock)
	if err := acquire.Err(); err != nil {
		res.AcquireErr = fmt.Errorf("warden: acquire %s: %w", h.Name, err)
	} else {
		res.Acquire, res.AcquireErr = acquireReply("acquire", h.Name, acquire)
	}
	return res
}
