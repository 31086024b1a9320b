package client

import (
	"context"
	"math"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// invalid returns an error matching ErrInvalidArgument that names field.
func invalid(field, format string, args ...any) error {
	return messages.Invalid(field, format, args...)
}

// The checks every call makes before any Redis call; the engine makes the
// same ones on the requests actor applications send it.
var (
	validateName  = messages.ValidateName
	validateOwner = messages.ValidateOwner
	validateWait  = messages.ValidateWait
)

// validateNameFor checks the name of a handle on kind's primitive that c
// makes: validateName's checks and, when c is on a Redis Cluster, that
// every key of the primitive lands in the name's slot (a name such as
// "a}b" would make every script fail with CROSSSLOT).
func validateNameFor(c *Client, kind messages.Kind, name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	if c != nil && isCluster(c.rdb) {
		return redisio.ValidateClusterName(name, kind)
	}
	return nil
}

// validateLockHandle checks a lock handle's name (validateNameFor) and
// owner: the first error.
func validateLockHandle(c *Client, kind messages.Kind, name, owner string) error {
	if err := validateNameFor(c, kind, name); err != nil {
		return err
	}
	return validateOwner(owner)
}

// MinLease is the shortest lease any call takes (a lock's fixed lease,
// Extend, a permit's lease): 30ms. One shorter after rounding up to whole
// milliseconds (29.5ms counts as 30ms) is refused with ErrInvalidArgument,
// naming the minimum, before any Redis call. A lease
// must outlive the acquire that takes it: the engine counts it from when
// the request was sent, less Redis's 1ms clock grain, so a lease of 1ms has
// always run out when its answer comes (ErrLockLost), and one of a few
// milliseconds leaves no room for a scheduling delay. It is also the
// shortest watchdog timeout and fair place time. A lease of MinLease or
// more still fails with ErrLockLost when the acquire takes longer than the
// lease (a slow network, a long pause); nothing is held then.
const MinLease = messages.MinLease

// validateLease checks a lease a caller gave: at least MinLease, or 0 when
// zeroOK (watchdog mode). Unlike the engine's protocol, the client takes a
// lease between whole milliseconds (time.Until(deadline), say): its calls
// round it up with wholeMillis, since Redis keeps leases in milliseconds.
func validateLease(lease time.Duration, zeroOK bool) error {
	if lease >= time.Millisecond {
		lease = wholeMillis(lease)
	}
	return messages.ValidateLease(lease, zeroOK)
}

// wholeMillis rounds d up to a whole number of milliseconds: Redis then
// holds a lease at least as long as asked, never shorter. (A duration
// within 1ms of the largest one is rounded down instead.)
func wholeMillis(d time.Duration) time.Duration {
	r := d % time.Millisecond
	switch {
	case r == 0:
		return d
	case d > math.MaxInt64-time.Millisecond:
		return d - r
	}
	return d - r + time.Millisecond
}

// checkCtx refuses a nil context, which would otherwise panic deep inside
// a call: every method that takes a context checks it first.
func checkCtx(ctx context.Context) error {
	if ctx == nil {
		return invalid("ctx", "nil context")
	}
	return nil
}
