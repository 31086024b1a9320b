package client_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/warden-go/warden/client"
)

// heldPoints are warden.lock.held's data points by kind: present, even
// at 0, or absent.
func (m *meters) heldPoints() map[string]int64 {
	m.t.Helper()
	out := map[string]int64{}
	s, ok := m.collect()["warden.lock.held"].(metricdata.Sum[int64])
	if !ok {
		return out
	}
	for _, dp := range s.DataPoints {
		v, _ := dp.Attributes.Value("warden.kind")
		out[v.Emit()] += dp.Value
	}
	return out
}

// A kind whose holdings all began and ended between two collections (a
// lock held for less than a scrape interval, one lost before the next
// scrape) is reported as 0 held, not left out: a dashboard of
// warden_lock_held shows 0, not "no data".
func TestMetricsHeldIsZeroForHoldingsBetweenCollections(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)

	l := c.Lock("metrics-brief")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	s := c.SpinLock("metrics-brief-spin")
	require.NoError(t, s.Lock(ctx))
	require.NoError(t, s.Unlock(ctx))
	g := c.GroupLock("metrics-brief-group", "a", "b")
	require.NoError(t, g.Lock(ctx))
	require.NoError(t, g.Unlock(ctx))
	ml := client.NewMultiLock(c.Lock("metrics-brief-m1"), c.Lock("metrics-brief-m2"))
	require.NoError(t, ml.Lock(ctx))
	require.NoError(t, ml.Unlock(ctx))

	held := m.heldPoints()
	for _, kind := range []string{"lock", "spin_lock", "group_lock", "multi_lock"} {
		n, ok := held[kind]
		assert.True(t, ok, "warden.lock.held{warden.kind=%s} reported", kind)
		assert.Zero(t, n, kind)
	}
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "spin_lock", "warden.end", "released"))
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "group_lock", "warden.end", "released"))
}

// Several Clients on one MeterProvider (a RedLock's, one per master, or
// an application's on several Redis servers): warden.lock.held adds their
// holdings up, and warden.lock.held.age.max is the oldest holding of
// them all, not that of whichever Client the SDK asked last.
func TestMetricsHeldAgeMaxAcrossClientsOfOneMeterProvider(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	ctx := testCtx(t)
	clkA, clkB := clockwork.NewFakeClock(), clockwork.NewFakeClock()
	a := e.newClient(t, client.WithMeterProvider(m.mp), client.WithClock(clkA))
	b := e.newClient(t, client.WithMeterProvider(m.mp), client.WithClock(clkB))

	la := a.Lock("metrics-age-a")
	require.NoError(t, la.LockLease(ctx, time.Hour))
	clkA.Advance(time.Minute) // a's holding is a minute old
	lb := b.Lock("metrics-age-b")
	require.NoError(t, lb.LockLease(ctx, time.Hour))
	clkB.Advance(time.Second) // b's a second

	assert.EqualValues(t, 2, m.sum("warden.lock.held", "warden.kind", "lock"))
	for range 3 { // whichever order the SDK runs the callbacks in
		age, ok := m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
		require.True(t, ok)
		assert.InDelta(t, 60, age, 1, "the oldest holding of both Clients")
	}
	require.NoError(t, lb.Unlock(ctx))
	age, ok := m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
	require.True(t, ok)
	assert.InDelta(t, 60, age, 1)
	e.close(t, b)
	age, ok = m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
	require.True(t, ok, "a's holding after b closed")
	assert.InDelta(t, 60, age, 1)
	require.NoError(t, la.Unlock(ctx))
	_, ok = m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
	assert.False(t, ok, "no holding, no age")
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "lock"))
}
