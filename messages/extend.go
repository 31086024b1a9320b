package messages

import "time"

// Extend asks to set the lease of Owner's current holding of Name anew:
// the holding then lives Lease from when Redis runs the request, and the
// engine counts its end (its LockLost) from there. The reply is Extended,
// or ExtendFailed: Err is ErrNotHeld when Owner does not hold the lock
// (not known to this engine, or found gone in Redis), ErrInvalidArgument
// when the holding is in watchdog mode (the watchdog keeps its lease; it
// has none to extend), ErrLockLost when its lease ran out while the
// request was on its way, or a Redis error (the lease is then either the
// old one or the new one, and the engine counts the earlier end).
//
// A read lock's holding has one lease per read hold (Redisson keeps a
// timeout key per hold): Extend sets each of Owner's read holds to Lease,
// and leaves other readers' holds alone. A holding with any read hold in
// watchdog mode is a watchdog holding.
type Extend struct {
	Name  string
	Kind  Kind
	Owner string
	// RequestID pairs the reply with the request; unique among the
	// owner's requests.
	RequestID string
	// Lease is the holding's new lease: a whole number of milliseconds,
	// at least MinLease.
	Lease time.Duration
}

// Extended answers Extend: Owner's holding Holding now ends Lease after
// the request reached Redis.
type Extended struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	Holding   uint64
}

// ExtendFailed answers Extend when the lease was not set anew, or its
// outcome is unknown (a Redis error). Holding is the holding the request
// was for (0 when this engine knew of none).
type ExtendFailed struct {
	Name      string
	Kind      Kind
	Owner     string
	RequestID string
	Err       error
	Holding   uint64
}

// Validate checks every field of the request.
func (m *Extend) Validate() error {
	if m == nil {
		return Invalid("extend", "nil")
	}
	return firstErr(ValidateName(m.Name), validateHeldKind(m.Kind), ValidateOwner(m.Owner),
		validateRequestID(m.RequestID), ValidateLease(m.Lease, false))
}
