package messages

import "errors"

// Sentinel errors shared by the engine and the client package. Match them
// with errors.Is; package client re-exports each under the same name.
var (
	// ErrNotHeld is returned by an unlock of a lock the owner does not hold
	// (Redisson's IllegalMonitorStateException).
	ErrNotHeld = errors.New("warden: lock not held")
	// ErrNotObtained is returned when a wait ended without the lock. When a
	// context ended the wait it is joined with the context's error.
	ErrNotObtained = errors.New("warden: lock not obtained")
	// ErrNotLocked is returned by RemainTTL when the lock does not exist.
	ErrNotLocked = errors.New("warden: lock not locked")
	// ErrLockLost reports that a held lock vanished or changed owner while
	// held (expired, force-unlocked, or lost in a Redis restart).
	ErrLockLost = errors.New("warden: lock lost")
	// ErrClosed is returned by every call after the Client was closed.
	ErrClosed = errors.New("warden: client closed")
	// ErrInvalidArgument reports a bad name, lease, wait, owner or permit
	// count; the wrapping message names the field.
	ErrInvalidArgument = errors.New("warden: invalid argument")
	// ErrNotReplicated reports that an acquire was not acknowledged by the
	// replicas WithReplicaSync asks for, after its bounded retries; every
	// hold it made was undone.
	ErrNotReplicated = errors.New("warden: not acknowledged by enough replicas")
	// ErrCancelled is the reason of an AcquireFailed sent in answer to a
	// Cancel: the requester gave up.
	ErrCancelled = errors.New("warden: acquire cancelled")
	// ErrTimeout is the reason of an AcquireFailed whose deadline passed.
	ErrTimeout = errors.New("warden: wait time elapsed")
)
