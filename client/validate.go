package client

import (
	"fmt"
	"time"
)

const (
	// maxNameLen is the longest lock name accepted, in bytes.
	maxNameLen = 64 << 10
)

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, field, fmt.Sprintf(format, args...))
}

// validateName checks a lock name.
func validateName(name string) error {
	switch {
	case name == "":
		return invalid("name", "empty")
	case len(name) > maxNameLen:
		return invalid("name", "%d bytes, more than %d", len(name), maxNameLen)
	}
	return nil
}

// validateOwner checks an owner chosen with WithOwner.
func validateOwner(owner string) error {
	switch {
	case owner == "":
		return invalid("owner", "empty")
	case len(owner) > maxNameLen:
		return invalid("owner", "%d bytes, more than %d", len(owner), maxNameLen)
	}
	return nil
}

// validateLease checks an explicit lease; zero is allowed where it selects
// watchdog mode (zeroOK). A time.Duration never exceeds 2^53 ms, the
// scripts' upper bound, so only the lower bound and whole milliseconds are
// checked here.
func validateLease(lease time.Duration, zeroOK bool) error {
	switch {
	case lease == 0 && zeroOK:
		return nil
	case lease < time.Millisecond:
		return invalid("lease", "%v is less than 1ms", lease)
	case lease%time.Millisecond != 0:
		return invalid("lease", "%v is not a whole number of milliseconds", lease)
	}
	return nil
}

// validateWait checks a wait time.
func validateWait(wait time.Duration) error {
	if wait < 0 {
		return invalid("wait", "%v is negative", wait)
	}
	return nil
}
