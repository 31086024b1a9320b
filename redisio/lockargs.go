package redisio

import (
	"context"
	"sync/atomic"
	"time"
)

// LockArgs are one reentrant lock's keys (the plain, fenced, spin and
// non-reentrant locks share the layout) as a Scripts' script arguments,
// made once: a caller that sends many calls for one name (the engine's key
// actor) keeps one and saves building and boxing the same strings on every
// call. It also keeps the last owner's arguments. Safe for concurrent use.
type LockArgs struct {
	name                          string
	nameArg, channelArg, tokenArg any
	recordArg                     any // UnlockRecordKey(name, the Scripts' token)
	owner                         atomic.Pointer[ownerArgs]
}

// ownerArgs are an owner's script arguments: the owner and its acquire
// record field.
type ownerArgs struct {
	owner            string
	ownerArg, recArg any
}

// LockArgs makes the arguments of the lock name for s.
func (s *Scripts) LockArgs(name string) *LockArgs {
	return &LockArgs{name: name, nameArg: name, channelArg: LockChannel(name), tokenArg: TokenKey(name),
		recordArg: UnlockRecordKey(name, s.token)}
}

// ownerArgs returns owner's arguments, made again only when the owner
// changed since the last call.
func (a *LockArgs) ownerArgs(owner string) *ownerArgs {
	if o := a.owner.Load(); o != nil && o.owner == owner {
		return o
	}
	o := &ownerArgs{owner: owner, ownerArg: owner, recArg: AcquireRecordField(owner)}
	a.owner.Store(o)
	return o
}

// UnlockWith is UnlockSynced on a's lock, or SpinUnlockSynced when
// publish is false.
func (s *Scripts) UnlockWith(ctx context.Context, r Redis, rs ReplicaSync, a *LockArgs, owner, reqID string, lease time.Duration,
	publish bool) (remaining int, held bool, acks int, err error) {
	if !publish {
		return s.unlockSynced(ctx, r, rs, "unlock spin lock", a, owner, reqID, lease, noPublish)
	}
	return s.unlockSynced(ctx, r, rs, "unlock lock", a, owner, reqID, lease, s.publishArg)
}
