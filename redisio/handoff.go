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
// returns them) and the acquire's (as AcquireWith returns them).
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
	return handoffResult("", h.Name, unlock, acquire)
}

// FairHandoff is Handoff for a fair lock: one pipeline of the fair unlock
// of From's last hold (which publishes on the queue's head's channel as
// usual), then To's fair acquire, which takes the lock when To is the
// queue's head (or the queue is empty) and otherwise leaves To queued, as
// its own attempt would. Each keeps its exactly-once record.
type FairHandoff struct {
	Name string
	// NonReentrant selects the non-reentrant fair lock's acquire.
	NonReentrant bool
	// From releases one hold; its lease refreshes a lock it still holds.
	From, FromReqID string
	FromLease       time.Duration
	// To acquires with lease ToLease; Allowance and Place are its place's,
	// as in FairAcquire.
	To, ToReqID               string
	ToLease, Allowance, Place time.Duration
	Now                       time.Time
}

// FairHandoff runs h (see FairHandoff).
func (s *Scripts) FairHandoff(ctx context.Context, r Redis, h FairHandoff) HandoffResult {
	uk, ua := s.fairUnlockArgs(h.Name, h.From, h.FromReqID, h.FromLease, h.Now)
	ak, aa := fairAcquireArgs(h.Name, h.To, h.ToReqID, h.ToLease, h.Allowance, h.Place, h.Now, true, h.NonReentrant)
	var unlock, acquire *redis.Cmd
	pipelineScripts(ctx, r, func(pipe redis.Pipeliner, eval evalFunc) {
		unlock = eval(fairUnlockScript, ctx, pipe, uk, ua...)
		acquire = eval(fairAcquireScript, ctx, pipe, ak, aa...)
	})
	return handoffResult("fair ", h.Name, unlock, acquire)
}

// handoffResult reads the replies of a handoff's unlock and acquire of
// lock name; kind ("" or "fair ") starts their errors' operation names.
func handoffResult(kind, name string, unlock, acquire *redis.Cmd) HandoffResult {
	var res HandoffResult
	res.Remaining, res.Held, res.UnlockErr = unlockReply(kind+"unlock", name, unlock)
	if err := acquire.Err(); err != nil {
		res.AcquireErr = fmt.Errorf("warden: %sacquire %s: %w", kind, name, err)
	} else {
		res.Acquire, res.AcquireErr = acquireReply(kind+"acquire", name, acquire)
	}
	return res
}
