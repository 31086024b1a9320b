package client

import (
	"errors"

	"github.com/warden-go/warden/messages"
)

// The errors warden returns, matched with errors.Is. They are the same
// values as in package messages, so actor code and Go code agree.
var (
	// ErrNotHeld: unlock by an owner that does not hold the lock.
	ErrNotHeld = messages.ErrNotHeld
	// ErrNotObtained: a wait ended without the lock: a blocking call's
	// (Lock, Acquire, Await...) for any reason but Close (which answers
	// ErrClosed), any call's (Try* too) when its context ended it; the
	// error then matches the context's error too (see the package doc).
	ErrNotObtained = messages.ErrNotObtained
	// ErrNotLocked: RemainTTL on an absent lock.
	ErrNotLocked = messages.ErrNotLocked
	// ErrLockLost: a held lock vanished or changed owner while held; also
	// an acquire whose fixed lease ran out before its answer came (a lease
	// shorter than the round trip), which leaves nothing held.
	ErrLockLost = messages.ErrLockLost
	// ErrClosed: the Client was closed.
	ErrClosed = messages.ErrClosed
	// ErrInvalidArgument: a bad name, lease, wait or option; the message
	// names the field.
	ErrInvalidArgument = messages.ErrInvalidArgument
	// ErrNotReplicated: with WithReplicaSync, an acquire that the replicas
	// did not acknowledge in its tries; no hold was left behind.
	ErrNotReplicated = messages.ErrNotReplicated
	// ErrAlreadyHeld: an acquire of a non-reentrant lock (NonReentrantLock,
	// NonReentrantFairLock) by the owner that already holds it. It fails
	// at once: it neither waits nor adds a hold.
	ErrAlreadyHeld = messages.ErrAlreadyHeld
)

// ErrFencingReset: a FencedLock acquire got a token no higher than one
// this Client handed out before for the name: the counter
// redisson_lock_token:{name} went backwards (evicted under a
// maxmemory-policy that evicts, lost in a restart without persistence or
// in a failover). The acquire was given back and no token is handed out;
// the error names the token got and the highest handed out. Before the
// give-back the Client raises the counter to that highest token (only a
// counter below it is set), so only this call fails: the next acquire,
// from this Client or any other, gets a higher token. Token fails the same
// way, and raises the counter too, when it reads a counter lower than the
// highest handed out. Only a Client that handed out a higher token can
// tell: see docs/server.md for what the server needs so that the counter
// survives, and for setting it back by hand.
var ErrFencingReset = errors.New("warden: fencing token counter went backwards")

// The errors of Inspect and Scan.
var (
	// ErrNoObject: nothing of the lock family is under the name.
	ErrNoObject = errors.New("warden: no lock-family object under the name")
	// ErrNotLockFamily: the key under the name is no object of the lock
	// family (a user's own list, say).
	ErrNotLockFamily = errors.New("warden: not a lock-family object")
)
