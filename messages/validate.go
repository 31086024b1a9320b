package messages

import (
	"fmt"
	"strings"
	"time"
)

// MaxNameLen is the longest lock name or owner accepted, in bytes.
const MaxNameLen = 64 << 10

// Invalid returns an error matching ErrInvalidArgument that names field.
func Invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, field, fmt.Sprintf(format, args...))
}

// ValidateName checks a lock name: 1 byte to 64 KiB.
func ValidateName(name string) error {
	switch {
	case name == "":
		return Invalid("name", "empty")
	case len(name) > MaxNameLen:
		return Invalid("name", "%d bytes, more than %d", len(name), MaxNameLen)
	}
	return nil
}

// ValidateOwner checks an owner identity: 1 byte to 64 KiB.
func ValidateOwner(owner string) error {
	switch {
	case owner == "":
		return Invalid("owner", "empty")
	case len(owner) > MaxNameLen:
		return Invalid("owner", "%d bytes, more than %d", len(owner), MaxNameLen)
	}
	return nil
}

// MinLease is the shortest lease accepted, by every leased primitive: a
// lock's fixed lease, an Extend, a permit's lease. A lease must outlive
// the acquire that takes it: the engine counts a lease from when its
// request was sent, less Redis's 1ms clock grain, so a lease of 1ms has
// always run out when its answer comes, and a few milliseconds leave no
// room for a scheduling delay. 30ms is also the shortest watchdog timeout
// (a watchdog-mode lock's lease).
const MinLease = 30 * time.Millisecond

// ValidateLease checks a lease: a whole number of milliseconds, at least
// MinLease; zero too when zeroOK (watchdog mode). A time.Duration never
// exceeds 2^53 ms, the scripts' upper bound.
func ValidateLease(lease time.Duration, zeroOK bool) error {
	switch {
	case lease == 0 && zeroOK:
		return nil
	case lease < MinLease:
		return Invalid("lease", "%v is less than the minimum lease, %v", lease, MinLease)
	case lease%time.Millisecond != 0:
		return Invalid("lease", "%v is not a whole number of milliseconds", lease)
	}
	return nil
}

// ValidateWait checks a wait time: not negative.
func ValidateWait(wait time.Duration) error {
	if wait < 0 {
		return Invalid("wait", "%v is negative", wait)
	}
	return nil
}

func validateRequestID(id string) error {
	switch {
	case id == "":
		return Invalid("request ID", "empty")
	case len(id) > MaxNameLen:
		return Invalid("request ID", "%d bytes, more than %d", len(id), MaxNameLen)
	}
	return nil
}

func validateKind(k Kind) error {
	if k >= kindEnd {
		return Invalid("kind", "%d is not a known kind", k)
	}
	return nil
}

// validateHeldKind checks that k is a lock kind, for the requests only
// held kinds take.
func validateHeldKind(k Kind) error {
	if err := validateKind(k); err != nil {
		return err
	}
	if !k.Held() {
		return Invalid("kind", "a %s has no holder", k)
	}
	return nil
}

// ValidatePermits checks a permit count: at least 1.
func ValidatePermits(permits int64) error {
	if permits < 1 {
		return Invalid("permits", "%d is less than 1", permits)
	}
	return nil
}

// validateKindFields checks the fields whose meaning depends on the kind.
func (m *Acquire) validateKindFields() error {
	switch m.Kind {
	case KindSemaphore:
		return firstErr(ValidatePermits(m.Permits), zeroLease(m.Lease), zeroWait(m.Wait))
	case KindPermitSemaphore:
		return firstErr(permitIDCount(m.Permits), ValidateLease(m.Lease, true), zeroWait(m.Wait))
	case KindCountDownLatch:
		return firstErr(zeroPermits(m.Permits), zeroLease(m.Lease), zeroWait(m.Wait))
	case KindFairLock, KindNonReentrantFairLock:
		return firstErr(zeroPermits(m.Permits), ValidateLease(m.Lease, true), ValidateWait(m.Wait))
	case KindGroupLock:
		return firstErr(zeroPermits(m.Permits), ValidateLease(m.Lease, true), zeroWait(m.Wait), ValidateGroupValues(m.Values))
	default:
		return firstErr(zeroPermits(m.Permits), ValidateLease(m.Lease, true), zeroWait(m.Wait))
	}
}

// MaxPermitIDs bounds the permits one permit-expirable semaphore acquire
// takes: each has an ID of its own, all sent in one script call.
const MaxPermitIDs = 1000

// permitIDCount checks how many permits a permit-expirable semaphore
// acquire takes: 0 (one) to MaxPermitIDs.
func permitIDCount(p int64) error {
	if p < 0 || p > MaxPermitIDs {
		return Invalid("permits", "%d is not between 1 and %d", p, MaxPermitIDs)
	}
	return nil
}

// ValidateGroupValues checks a group lock's values: at least one, each 1
// byte to 64 KiB without a ':' (the group's hash keeps a value's hold in
// fields "<value>:<owner>:..."; Redisson's values, Base64 hashes, have
// none), no value twice.
func ValidateGroupValues(values []string) error {
	if len(values) == 0 {
		return Invalid("values", "none")
	}
	seen := make(map[string]int, len(values))
	for i, v := range values {
		switch {
		case v == "":
			return Invalid("values", "value %d is empty", i)
		case len(v) > MaxNameLen:
			return Invalid("values", "value %d: %d bytes, more than %d", i, len(v), MaxNameLen)
		case strings.Contains(v, ":"):
			return Invalid("values", "value %d (%q) contains ':'", i, v)
		}
		if j, dup := seen[v]; dup {
			return Invalid("values", "values %d and %d are both %q", j, i, v)
		}
		seen[v] = i
	}
	return nil
}

// noValues checks that a request of kind, not a group lock, has no values.
func noValues(k Kind, values []string) error {
	if len(values) > 0 {
		return Invalid("values", "only a group lock request takes values, not a %s", k)
	}
	return nil
}

func zeroPermits(p int64) error {
	if p != 0 {
		return Invalid("permits", "%d: only a semaphore acquire takes permits", p)
	}
	return nil
}

func zeroLease(d time.Duration) error {
	if d != 0 {
		return Invalid("lease", "%v: this kind has no lease", d)
	}
	return nil
}

func zeroWait(d time.Duration) error {
	if d != 0 {
		return Invalid("wait", "%v: only a fair lock acquire takes a wait allowance", d)
	}
	return nil
}

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks every field of the request.
func (m *Acquire) Validate() error {
	if m == nil {
		return Invalid("acquire", "nil")
	}
	var values error
	if m.Kind != KindGroupLock {
		values = noValues(m.Kind, m.Values)
	}
	return firstErr(ValidateName(m.Name), validateKind(m.Kind), ValidateOwner(m.Owner),
		validateRequestID(m.RequestID), m.validateKindFields(), m.validateBackOff(), values)
}

// Validate checks every field of the request.
func (m *Release) Validate() error {
	if m == nil {
		return Invalid("release", "nil")
	}
	values := noValues(m.Kind, m.Values)
	if m.Kind == KindGroupLock && len(m.Values) > 0 {
		values = ValidateGroupValues(m.Values)
	}
	return firstErr(ValidateName(m.Name), validateHeldKind(m.Kind), ValidateOwner(m.Owner), validateRequestID(m.RequestID), values)
}

// Validate checks every field of the request.
func (m *Cancel) Validate() error {
	if m == nil {
		return Invalid("cancel", "nil")
	}
	return firstErr(ValidateName(m.Name), validateKind(m.Kind), ValidateOwner(m.Owner), validateRequestID(m.RequestID))
}

// Validate checks every field of the request.
func (m *Watch) Validate() error {
	if m == nil {
		return Invalid("watch", "nil")
	}
	return firstErr(ValidateName(m.Name), validateHeldKind(m.Kind), ValidateOwner(m.Owner))
}
