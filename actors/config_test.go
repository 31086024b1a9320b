package actors

import (
	"context"
	"errors"
	"log/slog"
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

// levels records the level and message of every log record.
type levels struct{ got []string }

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.got = append(l.got, r.Level.String()+" "+r.Message)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

// A streak of failures of a call retried every period is logged once at
// Warn, then at Debug, and its end once at Info; once the engine closes,
// a failure, Close cancelling the call, is not logged at all.
func TestFailStreakLogsEachStreakOnce(t *testing.T) {
	h := &levels{}
	io, cancel := context.WithCancel(context.Background())
	cfg := &Config{Logger: slog.New(h), IO: io}
	var f failStreak
	boom := errors.New("boom")
	for _, err := range []error{nil, boom, boom, nil, nil, boom} {
		f.note(cfg, err, "failed", "recovered")
	}
	cancel()
	f.note(cfg, nil, "failed", "recovered")
	f.note(cfg, boom, "failed", "recovered")
	// Once closing, a failure is Close cancelling the call: not logged,
	// and no streak starts.
	assert.Equal(t, []string{"WARN failed", "DEBUG failed", "INFO recovered", "WARN failed", "INFO recovered"}, h.got)
	assert.False(t, bool(f), "no streak starts while closing")
}
