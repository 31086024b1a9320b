package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// meters is an OpenTelemetry SDK MeterProvider read by hand.
type meters struct {
	t      *testing.T
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newMeters(t *testing.T) *meters {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &meters{t: t, reader: reader, mp: mp}
}

// collect reads every metric of warden's meter, by name.
func (m *meters) collect() map[string]metricdata.Aggregation {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(m.t, m.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/warden-go/warden" {
			continue
		}
		for _, md := range sm.Metrics {
			out[md.Name] = md.Data
		}
	}
	return out
}

// matches reports whether set has every attribute of want (key=value
// pairs).
func matches(set attribute.Set, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		v, ok := set.Value(attribute.Key(want[i]))
		if !ok || v.Emit() != want[i+1] {
			return false
		}
	}
	return true
}

// count is how many measurements the histogram name has with the
// attributes want (0 when it has none).
func (m *meters) count(name string, want ...string) uint64 {
	m.t.Helper()
	h, ok := m.collect()[name].(metricdata.Histogram[float64])
	if !ok {
		return 0
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

// sum is the value of the sum (counter or up-down counter) name with the
// attributes want.
func (m *meters) sum(name string, want ...string) int64 {
	m.t.Helper()
	s, ok := m.collect()[name].(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	var n int64
	for _, dp := range s.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

// gauge is the gauge name's value with the attributes want, and whether
// it has one.
func (m *meters) gauge(name string, want ...string) (float64, bool) {
	m.t.Helper()
	g, ok := m.collect()[name].(metricdata.Gauge[float64])
	if !ok {
		return 0, false
	}
	for _, dp := range g.DataPoints {
		if matches(dp.Attributes, want) {
			return dp.Value, true
		}
	}
	return 0, false
}

// Acquire outcomes, the held and waiting counters, and hold ends on real
// Redis.
func TestMetricsAcquireOutcomesAndHeld(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)

	l := c.Lock("metrics-lock")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Lock(ctx)) // a reentry: the same holding
	assert.EqualValues(t, 2, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "acquired"))
	assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", "lock"))

	other := c.Lock("metrics-lock")
	ok, err := other.TryLockWait(ctx, 50*time.Millisecond, 0)
	require.NoError(t, err)
	require.False(t, ok)
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "timeout"))

	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	require.ErrorIs(t, other.Lock(dctx), client.ErrNotObtained)
	cancel()
	assert.EqualValues(t, 2, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "timeout"),
		"a ctx deadline is a timeout")

	cctx, cancelNow := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- other.Lock(cctx) }()
	eventually(t, 10*time.Second, func() bool { return m.sum("warden.lock.waiting", "warden.kind", "lock") == 1 }, "one call waiting")
	cancelNow()
	require.ErrorIs(t, <-waited, context.Canceled)
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "lock", "warden.outcome", "cancelled"))
	assert.Zero(t, m.sum("warden.lock.waiting", "warden.kind", "lock"))

	age, ok := m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
	require.True(t, ok, "the age of the holding is observed")
	assert.GreaterOrEqual(t, age, 0.0)

	require.NoError(t, l.Unlock(ctx))
	assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", "lock"), "one hold of two released")
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "lock"))
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "lock", "warden.end", "released"))
	_, ok = m.gauge("warden.lock.held.age.max", "warden.kind", "lock")
	assert.False(t, ok, "no holding, no age")
	assert.Zero(t, m.sum("warden.lock.lost"))

	// Semaphores and latches have acquire calls, no holdings.
	s := c.Semaphore("metrics-sem")
	_, err = s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 1))
	ok, err = s.TryAcquire(ctx, 1, 10*time.Millisecond)
	require.NoError(t, err)
	require.False(t, ok)
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "semaphore", "warden.outcome", "acquired"))
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "semaphore", "warden.outcome", "timeout"))
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "semaphore"))
	for _, k := range []string{"fair_lock", "read_lock", "write_lock", "fenced_lock"} {
		assert.Zero(t, m.count("warden.lock.acquire.duration", "warden.kind", k), k)
	}
}

// A holding lost while held: held back to 0, lost counted once (also
// through the Unlock that then finds it gone), its hold ends lost.
func TestMetricsLostOnce(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)
	l := c.Lock("metrics-lost")
	require.NoError(t, l.Lock(ctx))
	assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", "lock"))
	require.NoError(t, e.rdb.Del(ctx, "metrics-lost").Err()) // gone behind the holder's back
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("the loss was not seen")
	}
	eventually(t, 10*time.Second, func() bool { return m.sum("warden.lock.lost", "warden.kind", "lock") == 1 }, "the loss counted")
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)
	assert.EqualValues(t, 1, m.sum("warden.lock.lost", "warden.kind", "lock"), "counted once")
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "lock"))
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "lock", "warden.end", "lost"))
	assert.Zero(t, m.count("warden.lock.hold.duration", "warden.end", "released"))

	// A fixed-lease holding that runs out is lost too, once.
	f := c.Lock("metrics-lease")
	require.NoError(t, f.LockLease(ctx, 100*time.Millisecond))
	select {
	case <-f.Lost():
	case <-ctx.Done():
		t.Fatal("the lease's end was not seen")
	}
	eventually(t, 10*time.Second, func() bool { return m.sum("warden.lock.lost", "warden.kind", "lock") == 2 }, "the second loss counted")
	_ = f.Unlock(ctx)
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "lock"))
	assert.EqualValues(t, 2, m.count("warden.lock.hold.duration", "warden.kind", "lock", "warden.end", "lost"))
}

// The holdings of a closed Client end closed; a MultiLock's and a
// RedLock's count under their own kinds.
func TestMetricsClosedAndGroups(t *testing.T) {
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)

	ml := client.NewMultiLock(c.Lock("metrics-a"), c.Lock("metrics-b"))
	require.NoError(t, ml.Lock(ctx))
	assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", "multi_lock"))
	assert.EqualValues(t, 2, m.sum("warden.lock.held", "warden.kind", "lock"), "its members")
	assert.EqualValues(t, 1, m.count("warden.lock.acquire.duration", "warden.kind", "multi_lock", "warden.outcome", "acquired"))
	require.NoError(t, ml.Unlock(ctx))
	assert.Zero(t, m.sum("warden.lock.held"))
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "multi_lock", "warden.end", "released"))

	rl := client.NewRedLock(c.Lock("metrics-red"))
	require.NoError(t, rl.Lock(ctx))
	assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", "red_lock"))
	require.NoError(t, rl.Unlock(ctx))
	assert.Zero(t, m.sum("warden.lock.held", "warden.kind", "red_lock"))
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "red_lock", "warden.end", "released"))

	held := c.FairLock("metrics-closed")
	require.NoError(t, held.Lock(ctx))
	require.NoError(t, ml.Lock(ctx))
	e.close(t, c)
	assert.Zero(t, m.sum("warden.lock.held"), "nothing held after Close")
	assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", "fair_lock", "warden.end", "closed"))
	assert.EqualValues(t, 2, m.count("warden.lock.hold.duration", "warden.kind", "lock", "warden.end", "closed"))
	eventually(t, 10*time.Second, func() bool {
		return m.count("warden.lock.hold.duration", "warden.kind", "multi_lock", "warden.end", "closed") == 1
	}, "the MultiLock's holding ends closed")
	assert.Zero(t, m.sum("warden.lock.lost"), "a close is no loss")
}

// The watchdog's renewals are timed, under the kinds they renewed.
func TestMetricsRenewal(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)
	l := c.ReadWriteLock("metrics-renew").ReadLock()
	require.NoError(t, l.Lock(ctx))
	eventually(t, 10*time.Second, func() bool {
		return m.count("warden.renewal.duration", "warden.kind", "read_lock") >= 2
	}, "two renewals timed")
	h := m.collect()["warden.renewal.duration"].(metricdata.Histogram[float64])
	for _, dp := range h.DataPoints {
		assert.Positive(t, dp.Sum, "renewals take time")
		longest, ok := dp.Max.Value()
		require.True(t, ok)
		assert.Less(t, longest, 5.0, "a loopback renewal takes well under the bound")
	}
	assert.Zero(t, m.sum("warden.renewal.failures"))
	require.NoError(t, l.Unlock(ctx))
}

// A renewal call that fails is counted, under the kind it renewed.
func TestMetricsRenewalFailures(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	e.hooked = redistest.NewHooked(e.rdb)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	ctx := testCtx(t)
	l := c.FencedLock("metrics-renew-fails")
	require.NoError(t, l.Lock(ctx))
	e.hooked.SetHook(func(sc redistest.ScriptCall) *redis.Cmd {
		if sc.Renews() {
			return redistest.Failed(errors.New("renewal refused by the test"))
		}
		return sc.Run()
	})
	eventually(t, 10*time.Second, func() bool {
		return m.sum("warden.renewal.failures", "warden.kind", "fenced_lock") >= 1
	}, "a failed renewal counted")
	assert.GreaterOrEqual(t, m.count("warden.renewal.duration", "warden.kind", "fenced_lock"), uint64(1))
	e.hooked.SetHook(nil)
	_ = l.Unlock(ctx)
}

// WithMetricLockNames adds the name; by default there is none.
func TestMetricsLockNames(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	named, plain := newMeters(t), newMeters(t)
	a := e.newClient(t, client.WithMeterProvider(named.mp), client.WithMetricLockNames())
	b := e.newClient(t, client.WithMeterProvider(plain.mp))
	ctx := testCtx(t)
	for _, c := range []*client.Client{a, b} {
		l := c.Lock("metrics-named-" + c.ID())
		require.NoError(t, l.Lock(ctx))
		if c == a {
			assert.EqualValues(t, 1, named.sum("warden.lock.held", "warden.name", l.Name(), "warden.kind", "lock"))
			_, ok := named.gauge("warden.lock.held.age.max", "warden.name", l.Name())
			assert.True(t, ok, "the age per name")
		}
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Zero(t, named.sum("warden.lock.held", "warden.name", "metrics-named-"+a.ID()))
	assert.EqualValues(t, 1, named.count("warden.lock.acquire.duration", "warden.name", "metrics-named-"+a.ID()))
	h := plain.collect()["warden.lock.acquire.duration"].(metricdata.Histogram[float64])
	require.NotEmpty(t, h.DataPoints)
	for _, dp := range h.DataPoints {
		_, has := dp.Attributes.Value("warden.name")
		assert.False(t, has, "no name by default: %v", dp.Attributes)
	}
}

// mutexKinds is the warden.kind of each of mutexCases.
var mutexKinds = map[string]string{"lock": "lock", "fair": "fair_lock", "read": "read_lock", "write": "write_lock",
	"fenced": "fenced_lock", "multilock": "multi_lock", "redlock": "red_lock",
	"spin": "spin_lock", "nonreentrant": "non_reentrant_lock", "nonreentrant-fair": "non_reentrant_fair_lock",
	"group": "group_lock", "striped": "multi_lock"}

// Every lock type: held back to 0 after its unlock and after its loss,
// the loss counted once, its holdings ending released and lost.
func TestMetricsEveryLockType(t *testing.T) {
	eachMutex(t, func(t *testing.T, e *env, mc mutexCase) {
		kind := mutexKinds[mc.kind]
		require.NotEmpty(t, kind, mc.kind)
		m := newMeters(t)
		s := mc.setup(t, e, "metered", client.WithMeterProvider(m.mp))
		ctx := testCtx(t)

		require.NoError(t, s.m.Lock(ctx))
		assert.EqualValues(t, 1, m.sum("warden.lock.held", "warden.kind", kind))
		require.NoError(t, s.m.Unlock(ctx))
		assert.Zero(t, m.sum("warden.lock.held"), "nothing held after the unlock")
		assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", kind, "warden.end", "released"))

		ok, err := s.m.TryLock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, e.rdb.Del(ctx, s.keys...).Err())
		await.Value(t, s.m.Lost(), 5*time.Second, "Lost")
		eventually(t, 10*time.Second, func() bool { return m.sum("warden.lock.lost", "warden.kind", kind) == 1 }, "the loss counted")
		assert.Zero(t, m.sum("warden.lock.held", "warden.kind", kind), "not held after the loss")
		_ = s.m.Unlock(ctx) // a lost holding's unlock: ErrLockLost
		assert.EqualValues(t, 1, m.sum("warden.lock.lost", "warden.kind", kind), "counted once")
		assert.Zero(t, m.sum("warden.lock.held"), "nothing held, members included")
		assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", kind, "warden.end", "lost"))
		assert.EqualValues(t, 1, m.count("warden.lock.hold.duration", "warden.kind", kind, "warden.end", "released"))
		assert.EqualValues(t, 2, m.count("warden.lock.acquire.duration", "warden.kind", kind, "warden.outcome", "acquired"))
	})
}

// points are the data points of the sum name with the attributes want.
func (m *meters) points(name string, want ...string) []metricdata.DataPoint[int64] {
	m.t.Helper()
	s, _ := m.collect()[name].(metricdata.Sum[int64])
	var out []metricdata.DataPoint[int64]
	for _, dp := range s.DataPoints {
		if matches(dp.Attributes, want) {
			out = append(out, dp)
		}
	}
	return out
}

// warden.lock.lost and warden.renewal.failures are reported at 0 from the
// Client's start, for every held kind, so that the first loss is a step
// from 0 to 1 (what increase() sees), not a series born at 1; with lock
// names a name's loss count starts at 0 with its first holding.
func TestMetricsCountersStartAtZero(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	m := newMeters(t)
	c := e.newClient(t, client.WithMeterProvider(m.mp))
	for _, kind := range []string{"lock", "fair_lock", "read_lock", "write_lock", "fenced_lock", "spin_lock",
		"non_reentrant_lock", "non_reentrant_fair_lock", "group_lock", "multi_lock", "red_lock"} {
		lost := m.points("warden.lock.lost", "warden.kind", kind)
		require.Len(t, lost, 1, "warden.lock.lost{kind=%s} before any holding", kind)
		assert.Zero(t, lost[0].Value)
		if kind != "multi_lock" && kind != "red_lock" { // their members renew under their own kinds
			failures := m.points("warden.renewal.failures", "warden.kind", kind)
			require.Len(t, failures, 1, "warden.renewal.failures{kind=%s} before any renewal", kind)
			assert.Zero(t, failures[0].Value)
		}
	}
	assert.Empty(t, m.points("warden.lock.lost", "warden.kind", "semaphore"), "a semaphore is not held")

	ctx := testCtx(t)
	l := c.Lock("metrics-zero")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, e.rdb.Del(ctx, "metrics-zero").Err()) // gone behind the holder's back
	eventually(t, 10*time.Second, func() bool { return m.sum("warden.lock.lost", "warden.kind", "lock") == 1 }, "0 -> 1")

	named := newMeters(t)
	n := e.newClient(t, client.WithMeterProvider(named.mp), client.WithMetricLockNames())
	assert.Empty(t, named.points("warden.lock.lost", "warden.kind", "lock"), "no name yet")
	nl := n.Lock("metrics-zero-named")
	require.NoError(t, nl.Lock(ctx))
	lost := named.points("warden.lock.lost", "warden.name", "metrics-zero-named")
	require.Len(t, lost, 1)
	assert.Zero(t, lost[0].Value)
	require.NoError(t, nl.Unlock(ctx))
}
