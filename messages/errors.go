package messages

import (
	"errors"
	"strings"
)

// Sentinel errors shared by the engine and the client package. Match them
// with errors.Is; package client re-exports each under the same name.
var (
	// ErrNotHeld is returned by an unlock of a lock the owner does not hold
	// (Redisson's IllegalMonitorStateException).
	ErrNotHeld = errors.New("warden: lock not held")
	// ErrNotObtained is returned when a wait ended without the lock. When a
	// context ended the wait, of a blocking or a Try call alike, the error
	// matches the context's error too.
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
	// ErrAlreadyHeld is returned by an acquire of a non-reentrant lock by
	// the owner that already holds it (Redisson's NON_REENTRANT_REACQUIRE,
	// an IllegalMonitorStateException there): it fails at once, without
	// waiting and without adding a hold.
	ErrAlreadyHeld = errors.New("warden: lock already held by this owner")
)

// Join returns an error that wraps the non-nil errs, like errors.Join
// (errors.Is and errors.As see each of them), but whose text is one line:
// their texts separated by "; ", each but the first without its leading
// "warden: ", so that the text has one prefix at most. It returns nil
// when every err is nil, and the error itself when only one is not nil.
func Join(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return joined(kept)
}

// joined is Join's error for two or more errors.
type joined []error

func (j joined) Error() string {
	var b strings.Builder
	for i, err := range j {
		text := oneLine(err.Error())
		if i > 0 {
			b.WriteString("; ")
			text = strings.TrimPrefix(text, "warden: ")
		}
		b.WriteString(text)
	}
	return b.String()
}

func (j joined) Unwrap() []error { return j }

// Within returns err, kept for errors.Is and errors.As, with its text
// preceded by what and without its own leading "warden: ": for a part of
// a message that already starts with "warden: ", so that the message has
// one prefix ("warden: multilock a, b: unlock: member b: lock not held").
func Within(what string, err error) error {
	if err == nil {
		return nil
	}
	return within{what: what, err: err}
}

type within struct {
	what string
	err  error
}

func (w within) Error() string { return w.what + ": " + strings.TrimPrefix(w.err.Error(), "warden: ") }

func (w within) Unwrap() error { return w.err }

// oneLine replaces the line breaks of s (an error made by errors.Join
// elsewhere) by "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", "; ")
}
