package client_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// recorded is one log record a recorder kept.
type recorded struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// recorder is a slog handler that keeps every record, at every level.
type recorder struct {
	mu      sync.Mutex
	records []recorded
	attrs   []slog.Attr
	root    *recorder
}

func newRecorder() *recorder {
	r := &recorder{}
	r.root = r
	return r
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &recorder{attrs: append(r.attrs[:len(r.attrs):len(r.attrs)], as...), root: r.root}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	got := recorded{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range r.attrs {
		got.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		got.attrs[a.Key] = a.Value.String()
		return true
	})
	r.root.mu.Lock()
	r.root.records = append(r.root.records, got)
	r.root.mu.Unlock()
	return nil
}

func (r *recorder) all() []recorded {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	return append([]recorded(nil), r.root.records...)
}

// WithLogger receives the engine's own records only, none of the actor
// system's: a lock taken, released and the Client closed log nothing; a
// lock lost logs one warning naming it.
func TestLoggerGetsTheEngineRecordsOnly(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	rec := newRecorder()
	c, err := client.New(e.rdb, client.WithLogger(slog.New(rec)), client.WithWatchdogTimeout(time.Second))
	require.NoError(t, err)
	l := c.Lock("logged")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, c.Close(ctx))
	for _, r := range rec.all() {
		t.Logf("%v %q %v", r.level, r.msg, r.attrs)
	}
	assert.Empty(t, rec.all(), "a lock taken and released, and a Close, log nothing")

	rec = newRecorder()
	c, err = client.New(e.rdb, client.WithLogger(slog.New(rec)), client.WithWatchdogTimeout(time.Second))
	require.NoError(t, err)
	l = c.Lock("logged")
	require.NoError(t, l.Lock(ctx))
	ok, err := c.Lock("logged").ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	await.Value(t, l.Lost(), 5*time.Second, "the loss of the force-unlocked lock")
	require.NoError(t, c.Close(ctx))
	var lost []recorded
	for _, r := range rec.all() {
		t.Logf("%v %q %v", r.level, r.msg, r.attrs)
		assert.True(t, strings.HasPrefix(r.msg, "warden: "), "the engine's own record: %q", r.msg)
		if r.msg == "warden: lock lost" {
			lost = append(lost, r)
		}
	}
	require.Len(t, lost, 1, "one record of the loss")
	assert.Equal(t, slog.LevelWarn, lost[0].level)
	assert.Equal(t, "logged", lost[0].attrs["name"])
	assert.Equal(t, l.Owner(), lost[0].attrs["owner"])
}

// A renewal call that fails logs a warning and the next that succeeds a
// line at Info. A streak of failures warns once, then logs at Debug until
// the lock, unrenewed for its lease, is lost (a warning).
func TestLoggerRenewalFailuresWarnOnce(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	e.hooked = redistest.NewHooked(e.rdb)
	rec := newRecorder()
	const wd = 3 * time.Second
	c := e.newClient(t, client.WithLogger(slog.New(rec)), client.WithWatchdogTimeout(wd))
	ctx := testCtx(t)
	l := c.Lock("renewal-fails")
	require.NoError(t, l.Lock(ctx))
	var renewals atomic.Int64
	refused := errors.New("refused by the test")
	// The second renewal fails alone; from the fourth on every one fails,
	// until the lease the third gave runs out.
	e.hooked.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if !sc.Renews() {
			return sc.Run()
		}
		if n := renewals.Add(1); n == 2 || n >= 4 {
			return redistest.Failed(refused)
		}
		cmd := sc.Run()
		if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			renewals.Add(-1) // the same renewal comes again as EVAL
		}
		return cmd
	})
	await.Value(t, l.Lost(), 4*wd, "the loss of the lock no renewal reaches")
	// Lost closes before the loss is logged: wait for the record too.
	eventually(t, 5*time.Second, func() bool {
		return slices.ContainsFunc(rec.all(), func(r recorded) bool { return r.msg == "warden: lock lost" })
	}, "the loss's record")
	levels := map[string][]slog.Level{}
	for _, r := range rec.all() {
		t.Logf("%v %q %v", r.level, r.msg, r.attrs)
		levels[r.msg] = append(levels[r.msg], r.level)
	}
	failed := levels["warden: renewal failed; retrying every tick"]
	require.GreaterOrEqual(t, len(failed), 3, "one failure, then a streak of at least two")
	assert.Equal(t, []slog.Level{slog.LevelWarn, slog.LevelWarn}, failed[:2], "the first failure of each streak warns")
	for _, level := range failed[2:] {
		assert.Equal(t, slog.LevelDebug, level, "the rest of a streak is debug")
	}
	assert.Equal(t, []slog.Level{slog.LevelInfo}, levels["warden: renewal succeeds again"], "the recovery, once")
	assert.Equal(t, []slog.Level{slog.LevelWarn}, levels["warden: lock lost"])
	assert.Len(t, levels, 3, "nothing else")
}

// A Close right after New logs nothing: the first client-registry write,
// cancelled by Close while in flight, is not a failure to report. (Before
// the fix about one round in twelve logged "client registry write failed".)
func TestCloseRightAfterNewLogsNothing(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	for i := range 300 {
		rec := newRecorder()
		c, err := client.New(e.rdb, client.WithLogger(slog.New(rec)))
		require.NoError(t, err)
		require.NoError(t, c.Close(context.Background()))
		for _, r := range rec.all() {
			t.Errorf("round %d: %v %q %v", i, r.level, r.msg, r.attrs)
		}
	}
}
