package messages

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJoinIsOneLine(t *testing.T) {
	assert.NoError(t, Join(nil, nil))
	assert.Same(t, ErrNotHeld, Join(nil, ErrNotHeld), "one error is itself")

	multi := errors.Join(errors.New("a"), errors.New("b")) // "a\nb"
	err := Join(ErrClosed, context.Canceled, nil, multi)
	require.Error(t, err)
	assert.Equal(t, "warden: client closed; context canceled; a; b", err.Error())
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, multi)
}

// Join keeps one "warden: " prefix: the parts after the first lose theirs.
func TestJoinKeepsOnePrefix(t *testing.T) {
	err := Join(Invalid("name", "empty"), Invalid("wait", "negative"), ErrNotHeld)
	assert.Equal(t, "warden: invalid argument: name: empty; invalid argument: wait: negative; lock not held", err.Error())
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, "context canceled; lock lost", Join(context.Canceled, ErrLockLost).Error())
}

// Within keeps the error for errors.Is and drops its own "warden: ", so
// the message it goes into keeps one prefix.
func TestWithinDropsTheInnerPrefix(t *testing.T) {
	err := Within("member b", fmt.Errorf("%w: lock b", ErrNotHeld))
	assert.Equal(t, "member b: lock not held: lock b", err.Error())
	assert.ErrorIs(t, err, ErrNotHeld)
	assert.NoError(t, Within("member b", nil))
	assert.Equal(t, "x: plain", Within("x", errors.New("plain")).Error())
}
