package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warden-go/warden/client"
)

// spanAttrs returns a span's attributes as strings.
func spanAttrs(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// A span per acquire (with its wait) and per release, a child of the
// caller's span, with the name, kind and outcome.
func TestTracingSpanPerBlockingCall(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	c := e.newClient(t, client.WithTracerProvider(tp))
	ctx := testCtx(t)

	pctx, parent := tp.Tracer("test").Start(ctx, "handle order")
	l := c.Lock("traced")
	require.NoError(t, l.Lock(pctx))
	ok, err := c.Lock("traced").TryLockWait(pctx, 20*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, l.Unlock(pctx))
	ml := client.NewMultiLock(c.Lock("traced-a"), c.Lock("traced-b"))
	require.NoError(t, ml.Lock(pctx))
	require.NoError(t, ml.Unlock(pctx))
	parent.End()

	spans := exp.GetSpans()
	var mine []tracetest.SpanStub
	for _, s := range spans {
		if s.Name != "handle order" {
			mine = append(mine, s)
		}
	}
	type want struct{ name, lock, kind, outcome string }
	var got []want
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	for _, s := range mine {
		a := spanAttrs(s)
		got = append(got, want{s.Name, a["warden.name"], a["warden.kind"], a["warden.outcome"]})
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext.TraceID(), "%s: one trace", s.Name)
		p, ok := byID[s.Parent.SpanID().String()]
		require.True(t, ok, "%s %s has a parent among the spans", s.Name, a["warden.name"])
		if a["warden.kind"] == "lock" && (a["warden.name"] == "traced-a" || a["warden.name"] == "traced-b") {
			assert.Contains(t, []string{"warden.acquire", "handle order"}, p.Name)
			if s.Name == "warden.acquire" {
				assert.Equal(t, "multi_lock", spanAttrs(p)["warden.kind"], "a member's acquire is a child of the MultiLock's")
			}
		} else {
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent.SpanID(), "%s %s: a child of the caller's span", s.Name, a["warden.name"])
		}
		assert.False(t, s.EndTime.Before(s.StartTime))
	}
	assert.Subset(t, got, []want{
		{"warden.acquire", "traced", "lock", "acquired"},
		{"warden.acquire", "traced", "lock", "timeout"},
		{"warden.release", "traced", "lock", "released"},
		{"warden.acquire", "traced-a, traced-b", "multi_lock", "acquired"},
		{"warden.acquire", "traced-a", "lock", "acquired"},
		{"warden.acquire", "traced-b", "lock", "acquired"},
		{"warden.release", "traced-a", "lock", "released"},
	})
	assert.Len(t, got, 8, "%v", got)

	// Without a parent span the spans are roots.
	exp.Reset()
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	roots := exp.GetSpans()
	require.Len(t, roots, 2)
	for _, s := range roots {
		assert.False(t, s.Parent.IsValid())
	}
	assert.Contains(t, roots[0].Attributes, attribute.String("warden.kind", "lock"))

	// Permits: the acquire and the release, and a release of an unknown
	// permit, not_held.
	exp.Reset()
	p := c.PermitExpirableSemaphore("traced-permits")
	_, err = p.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	id, err := p.Acquire(pctx, 0)
	require.NoError(t, err)
	require.NoError(t, p.Release(pctx, id))
	require.ErrorIs(t, p.Release(pctx, id), client.ErrNotHeld)
	ids, err := p.AcquirePermits(pctx, 1, 0)
	require.NoError(t, err)
	require.NoError(t, p.ReleasePermits(pctx, ids...))
	s := c.Semaphore("traced-sem")
	require.NoError(t, s.Release(pctx, 1))
	released, err := s.ReleaseIfExists(pctx, 1)
	require.NoError(t, err)
	require.True(t, released)
	released, err = c.Semaphore("traced-none").ReleaseIfExists(pctx, 1)
	require.NoError(t, err)
	require.False(t, released)
	got = nil
	for _, s := range exp.GetSpans() {
		a := spanAttrs(s)
		got = append(got, want{s.Name, a["warden.name"], a["warden.kind"], a["warden.outcome"]})
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent.SpanID(), "%s: a child of the caller's span", s.Name)
	}
	assert.Equal(t, []want{
		{"warden.acquire", "traced-permits", "permit_semaphore", "acquired"},
		{"warden.release", "traced-permits", "permit_semaphore", "released"},
		{"warden.release", "traced-permits", "permit_semaphore", "not_held"},
		{"warden.acquire", "traced-permits", "permit_semaphore", "acquired"},
		{"warden.release", "traced-permits", "permit_semaphore", "released"},
		{"warden.release", "traced-sem", "semaphore", "released"},
		{"warden.release", "traced-sem", "semaphore", "released"},
		{"warden.release", "traced-none", "semaphore", "not_held"},
	}, got)
}
