package messages

import (
	"context"
	"errors"
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
