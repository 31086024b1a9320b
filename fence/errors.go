package fence

import (
	"errors"
	"fmt"

	"github.com/warden-go/warden/messages"
)

var (
	// ErrStaleToken: a write whose token is lower than the highest one
	// the resource has seen; nothing was written. The error is a
	// *StaleTokenError, which names the resource, the token given and the
	// highest seen.
	ErrStaleToken = errors.New("warden: stale fencing token")
	// ErrInvalidArgument: a zero or negative token, an empty or unusable
	// resource key, a nil client or database, an unknown dialect, a bad
	// option; the message names the field. It is warden's
	// ErrInvalidArgument (client.ErrInvalidArgument), and nothing was
	// written.
	ErrInvalidArgument = messages.ErrInvalidArgument
)

// StaleTokenError is the error of a write refused for its token: Resource
// (the Redis key, or the SQL resource) has seen Highest, which is greater
// than Token. It matches ErrStaleToken.
type StaleTokenError struct {
	Resource string
	Token    int64
	Highest  int64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v: resource %q: token %d, highest seen %d", ErrStaleToken, e.Resource, e.Token, e.Highest)
}

// Unwrap returns ErrStaleToken.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }

// Admit is the guard's decision, the same for every store: a write with
// token on a resource whose highest token seen is highest (0: none yet)
// is admitted when token is not below it; else the error is a
// *StaleTokenError. The Redis guard's script makes this decision inside
// Redis, the SQL guard's statement inside the database; Admit makes the
// same decision in Go, for a store of the caller's own (or a simulated
// one). A token that is not positive is ErrInvalidArgument, as the
// guards refuse it: fencing tokens start at 1.
func Admit(resource string, token, highest int64) error {
	if err := validToken(token); err != nil {
		return err
	}
	if token < highest {
		return &StaleTokenError{Resource: resource, Token: token, Highest: highest}
	}
	return nil
}

// invalid returns an ErrInvalidArgument naming field.
func invalid(field, format string, args ...any) error {
	return messages.Invalid(field, format, args...)
}

// validToken checks a token: positive.
func validToken(token int64) error {
	if token <= 0 {
		return invalid("token", "%d is not positive", token)
	}
	return nil
}
