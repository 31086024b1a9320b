package messages

import (
	"fmt"
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

// ValidateLease checks a lease: a whole number of milliseconds, at least
// 1ms; zero too when zeroOK (watchdog mode). A time.Duration never exceeds
// 2^53 ms, the scripts' upper bound.
func ValidateLease(lease time.Duration, zeroOK bool) error {
	switch {
	case lease == 0 && zeroOK:
		return nil
	case lease < time.Millisecond:
		return Invalid("lease", "%v is less than 1ms", lease)
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
	if k != KindLock {
		return Invalid("kind", "%d is not a known kind", k)
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
	return firstErr(ValidateName(m.Name), validateKind(m.Kind), ValidateOwner(m.Owner),
		validateRequestID(m.RequestID), ValidateLease(m.Lease, true))
}

// Validate checks every field of the request.
func (m *Release) Validate() error {
	if m == nil {
		return Invalid("release", "nil")
	}
	return firstErr(ValidateName(m.Name), validateKind(m.Kind), ValidateOwner(m.Owner), validateRequestID(m.RequestID))
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
	return firstErr(ValidateName(m.Name), validateKind(m.Kind), ValidateOwner(m.Owner))
}
