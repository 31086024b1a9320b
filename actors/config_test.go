package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/redisio"
)

// Calls that start within one window share a context whose deadline is
// IOTimeout after the window's end; a call after the window gets a new
// one; cancelling the IO context ends them all.
func TestSharedCallDeadlines(t *testing.T) {
	io, cancel := context.WithCancel(context.Background())
	const window = 50 * time.Millisecond
	cfg := Config{IO: io, calls: &callDeadlines{window: window}}

	start := time.Now()
	first, done := cfg.ioContext()
	done() // a no-op: calls still running share the context
	second, _ := cfg.ioContext()
	require.Same(t, first, second, "calls in one window share a context")
	require.NoError(t, first.Err())
	dl, ok := first.Deadline()
	require.True(t, ok)
	assert.False(t, dl.Before(start.Add(redisio.IOTimeout)), "deadline %v is under IOTimeout", dl.Sub(start))
	assert.False(t, dl.After(time.Now().Add(redisio.IOTimeout+window)), "deadline %v is over IOTimeout plus the window", dl.Sub(start))

	time.Sleep(window + 10*time.Millisecond)
	third, _ := cfg.ioContext()
	require.NotSame(t, first, third, "a call after the window gets a context of its own")
	dl3, _ := third.Deadline()
	assert.True(t, dl3.After(dl), "a later window ends later")

	cancel()
	assert.ErrorIs(t, first.Err(), context.Canceled)
	assert.ErrorIs(t, third.Err(), context.Canceled)

	// Without a window every call has its own context.
	own := Config{IO: context.Background()}
	a, ca := own.ioContext()
	b, cb := own.ioContext()
	defer ca()
	defer cb()
	assert.NotSame(t, a, b)
}
