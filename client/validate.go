package client

import "github.com/warden-go/warden/messages"

// invalid returns an error matching ErrInvalidArgument that names field.
func invalid(field, format string, args ...any) error {
	return messages.Invalid(field, format, args...)
}

// The checks every call makes before any Redis call; the engine makes the
// same ones on the requests actor applications send it.
var (
	validateName  = messages.ValidateName
	validateOwner = messages.ValidateOwner
	validateLease = messages.ValidateLease
	validateWait  = messages.ValidateWait
)
