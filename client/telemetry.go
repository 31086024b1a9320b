package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/warden-go/warden/messages"
)

// instrumentationName names warden's meter and tracer.
const instrumentationName = "github.com/warden-go/warden"

// Attribute keys of warden's instruments and spans.
const (
	attrKind    = "warden.kind"
	attrName    = "warden.name"
	attrOutcome = "warden.outcome"
	attrEnd     = "warden.end"
)

// meterKind is what a measurement is about: a messages.Kind, or one of the
// two kinds made of several locks.
type meterKind uint8

const (
	meterMultiLock meterKind = 254
	meterRedLock   meterKind = 255
)

// kindLabel is the warden.kind value of a messages.Kind: its name with
// spaces and hyphens made underscores ("fair_lock", "count_down_latch"),
// except the permit-expirable semaphore's, "permit_semaphore".
func kindLabel(k messages.Kind) string {
	if k == messages.KindPermitSemaphore {
		return "permit_semaphore"
	}
	return strings.NewReplacer(" ", "_", "-", "_").Replace(k.String())
}

// kindAttrs are the warden.kind attribute of every meterKind (kindName's
// value), made once: a span takes its kind from here.
var kindAttrs = func() (a [256]attribute.KeyValue) {
	for k := range a {
		a[k] = attribute.String(attrKind, kindName(meterKind(k)))
	}
	return a
}()

// outcome is how an acquire call ended.
type outcome uint8

const (
	outAcquired outcome = iota
	outTimeout
	outCancelled
	outError
	outcomes
)

var outcomeNames = [outcomes]string{"acquired", "timeout", "cancelled", "error"}

// holdEnd is how a holding ended.
type holdEnd uint8

const (
	endReleased holdEnd = iota
	endLost
	endClosed
	holdEnds
)

var holdEndNames = [holdEnds]string{"released", "lost", "closed"}

// kindOptions are one kind's measurement options, made once so that a
// measurement allocates nothing.
type kindOptions struct {
	kind     attribute.KeyValue
	record   []metric.RecordOption
	add      []metric.AddOption
	outcome  [outcomes][]metric.RecordOption
	end      [holdEnds][]metric.RecordOption
	observed []metric.ObserveOption
}

// telemetry is a Client's OpenTelemetry instruments and tracer, and the
// holdings it counts. Its methods do nothing on a Client whose meter
// provider is a no-op (metrics off) or whose tracer provider is (tracing
// off).
type telemetry struct {
	metrics  bool
	tracing  bool
	withName bool
	clock    clockwork.Clock
	tracer   trace.Tracer
	// spanStart are the options of every span, made once.
	spanStart []trace.SpanStartOption

	acquireDuration metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	held            metric.Int64ObservableUpDownCounter
	waiting         metric.Int64ObservableUpDownCounter
	lost            metric.Int64Counter
	renewalDuration metric.Float64Histogram
	renewalFailures metric.Int64Counter
	ageGauge        metric.Float64ObservableGauge
	registration    metric.Registration
	// ageGroup is the Clients whose age gauge one callback observes (see
	// ageGroups); ageProvider their MeterProvider, nil for a group of one.
	ageGroup    *ageGroup
	ageProvider metric.MeterProvider

	kinds [256]*kindOptions

	// waits counts the calls waiting now, per kind; with lock names,
	// namedWaits does, per kind and name.
	waits     [256]atomic.Int64
	waitKinds [256]atomic.Bool // kinds that have had a waiting call

	mu sync.Mutex
	// holdings are the holdings of single locks now, with when each began;
	// groups those of MultiLocks and RedLocks.
	holdings map[holdingKey]time.Time
	groups   map[*groupHold]struct{}
	closed   bool // Close began: holdings that start now are not counted
	// heldSeries are the series that have had a holding: warden.lock.held
	// reports them, 0 when nothing is held.
	heldSeries map[series]struct{}
	namedWaits map[series]int64
}

// series is one set of attributes: a kind, and a name with lock names.
type series struct {
	kind meterKind
	name string
}

// groupHold is one holding of a MultiLock or RedLock.
type groupHold struct {
	kind  meterKind
	name  string
	start time.Time
}

// newTelemetry makes the instruments of mp and the tracer of tp.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, withName bool, clock clockwork.Clock) (*telemetry, error) {
	t := &telemetry{withName: withName, clock: clock,
		holdings: map[holdingKey]time.Time{}, groups: map[*groupHold]struct{}{},
		heldSeries: map[series]struct{}{}, namedWaits: map[series]int64{}}
	if _, off := tp.(tracenoop.TracerProvider); !off {
		t.tracing = true
		t.tracer = tp.Tracer(instrumentationName)
		t.spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	}
	if _, off := mp.(metricnoop.MeterProvider); off {
		return t, nil
	}
	t.metrics = true
	// "unknown" is never a request's kind (the client validates them): its
	// kinds share one set of options.
	unknown := newKindOptions(attribute.String(attrKind, "unknown"))
	for k := range t.kinds {
		t.kinds[k] = unknown
		if kindAttrs[k] != unknown.kind {
			t.kinds[k] = newKindOptions(kindAttrs[k])
		}
	}

	m := mp.Meter(instrumentationName)
	var errs []error
	hist := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	waits := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	t.acquireDuration = hist("warden.lock.acquire.duration", "From an acquire call to its answer.", waits...)
	t.holdDuration = hist("warden.lock.hold.duration", "From acquired to the end of the holding.",
		0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
	t.renewalDuration = hist("warden.renewal.duration", "One watchdog renewal call, for every lock it renews.", waits[:14]...)
	var err error
	// held and waiting are asynchronous up-down counters: the callback
	// reads what the Client keeps anyway, so a call costs no measurement.
	t.held, err = m.Int64ObservableUpDownCounter("warden.lock.held", metric.WithUnit("{holding}"),
		metric.WithDescription("Holdings of this client now."))
	errs = append(errs, err)
	t.waiting, err = m.Int64ObservableUpDownCounter("warden.lock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Acquire calls waiting for their answer now."))
	errs = append(errs, err)
	t.lost, err = m.Int64Counter("warden.lock.lost", metric.WithUnit("{holding}"),
		metric.WithDescription("Holdings lost while held."))
	errs = append(errs, err)
	t.renewalFailures, err = m.Int64Counter("warden.renewal.failures", metric.WithUnit("{call}"),
		metric.WithDescription("Watchdog renewal calls that failed."))
	errs = append(errs, err)
	t.ageGauge, err = m.Float64ObservableGauge("warden.lock.held.age.max", metric.WithUnit("s"),
		metric.WithDescription("The age of this client's oldest holding."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.zeroCounters()
	t.registration, err = m.RegisterCallback(t.observe, t.held, t.waiting)
	if err != nil {
		return nil, err
	}
	if err := t.joinAgeGroup(mp, m); err != nil {
		_ = t.registration.Unregister()
		return nil, err
	}
	return t, nil
}

func newKindOptions(kind attribute.KeyValue) *kindOptions {
	o := &kindOptions{kind: kind}
	set := attribute.NewSet(kind)
	o.record = []metric.RecordOption{metric.WithAttributeSet(set)}
	o.add = []metric.AddOption{metric.WithAttributeSet(set)}
	o.observed = []metric.ObserveOption{metric.WithAttributeSet(set)}
	for i, name := range outcomeNames {
		o.outcome[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kind, attribute.String(attrOutcome, name)))}
	}
	for i, name := range holdEndNames {
		o.end[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kind, attribute.String(attrEnd, name)))}
	}
	return o
}

// stop ends the callbacks of the held, waiting and age instruments.
func (t *telemetry) stop() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
	t.leaveAgeGroup()
}

// addOptions are the options of an Add about name.
func (t *telemetry) addOptions(o *kindOptions, name string) []metric.AddOption {
	if !t.withName {
		return o.add
	}
	return []metric.AddOption{metric.WithAttributes(o.kind, attribute.String(attrName, name))}
}

// recordOptions are the options of a Record about name with the attribute
// extra, whose precomputed options (without the name) are made.
func (t *telemetry) recordOptions(made []metric.RecordOption, o *kindOptions, name string, extra attribute.KeyValue) []metric.RecordOption {
	if !t.withName {
		return made
	}
	return []metric.RecordOption{metric.WithAttributes(o.kind, attribute.String(attrName, name), extra)}
}

// call is one acquire call being measured and traced.
type call struct {
	t     *telemetry
	kind  meterKind
	name  string
	began time.Time
	span  trace.Span
}

// begin starts measuring an acquire call of kind on name (a wait, counted
// in warden.lock.waiting until end) and its span, a child of ctx's, whose
// context it returns.
func (t *telemetry) begin(ctx context.Context, kind meterKind, name string) (context.Context, call) {
	c := call{t: t, kind: kind, name: name}
	if t.tracing {
		ctx, c.span = t.startSpan(ctx, "warden.acquire", kind, name)
	}
	if t.metrics {
		c.began = t.clock.Now()
		t.wait(kind, name, 1)
	}
	return ctx, c
}

// end records the call's outcome: acquired, or how err ended it.
func (c call) end(ctx context.Context, acquired bool, err error) {
	o := outcomeOf(acquired, err)
	if c.span != nil {
		endSpan(c.span, outcomeAttrs[o:o+1], o == outError, err)
	}
	if !c.t.metrics {
		return
	}
	k := c.t.kinds[c.kind]
	c.t.wait(c.kind, c.name, -1)
	c.t.acquireDuration.Record(ctx, c.t.clock.Since(c.began).Seconds(),
		c.t.recordOptions(k.outcome[o], k, c.name, attribute.String(attrOutcome, outcomeNames[o]))...)
}

// wait counts a call of kind on name that begins (1) or ends (-1) its
// wait.
func (t *telemetry) wait(kind meterKind, name string, delta int64) {
	if !t.withName {
		t.waits[kind].Add(delta)
		t.waitKinds[kind].Store(true)
		return
	}
	t.mu.Lock()
	t.namedWaits[series{kind, name}] += delta
	t.mu.Unlock()
}

// outcomeOf names how an acquire ended: acquired; timeout when its wait
// or ctx's deadline ran out (a Try call's false has no error); cancelled
// when ctx was cancelled; error otherwise.
func outcomeOf(acquired bool, err error) outcome {
	switch {
	case acquired:
		return outAcquired
	case err == nil, errors.Is(err, context.DeadlineExceeded):
		return outTimeout
	case errors.Is(err, context.Canceled):
		return outCancelled
	case errors.Is(err, ErrNotObtained) && !errors.Is(err, ErrClosed):
		return outTimeout
	}
	return outError
}

// startSpan starts a span named op about kind and name.
func (t *telemetry) startSpan(ctx context.Context, op string, kind meterKind, name string) (context.Context, trace.Span) {
	ctx, s := t.tracer.Start(ctx, op, t.spanStart...)
	if s.IsRecording() {
		s.SetAttributes(attribute.String(attrName, name), kindAttrs[kind])
	}
	return ctx, s
}

// endSpan ends s with the attributes result, and the error status when
// failed.
func endSpan(s trace.Span, result []attribute.KeyValue, failed bool, err error) {
	if s.IsRecording() {
		s.SetAttributes(result...)
		if failed && err != nil {
			s.SetStatus(codes.Error, err.Error())
		}
	}
	s.End()
}

// kindName is the warden.kind value of kind.
func kindName(kind meterKind) string {
	switch kind {
	case meterMultiLock:
		return "multi_lock"
	case meterRedLock:
		return "red_lock"
	}
	return kindLabel(messages.Kind(kind))
}

// releaseSpan starts the span of a release of kind on name; a nil span
// when tracing is off.
func (t *telemetry) releaseSpan(ctx context.Context, kind meterKind, name string) trace.Span {
	if !t.tracing {
		return nil
	}
	_, s := t.startSpan(ctx, "warden.release", kind, name)
	return s
}

// endRelease ends a release's span: released, not_held or error.
func endRelease(s trace.Span, err error) {
	if s == nil {
		return
	}
	result := releaseReleased
	switch {
	case errors.Is(err, ErrNotHeld):
		result = releaseNotHeld
	case err != nil:
		result = releaseError
	}
	endSpan(s, releaseAttrs[result:result+1], result == releaseError, err)
}

// How a release ended, as its span's warden.outcome says.
const (
	releaseReleased = iota
	releaseNotHeld
	releaseError
)

// The warden.outcome attributes of the spans, made once: endSpan takes
// one as a slice of one, which costs no allocation.
var (
	outcomeAttrs = func() (a [outcomes]attribute.KeyValue) {
		for i, name := range outcomeNames {
			a[i] = attribute.String(attrOutcome, name)
		}
		return a
	}()
	releaseAttrs = [...]attribute.KeyValue{
		releaseReleased: attribute.String(attrOutcome, "released"),
		releaseNotHeld:  attribute.String(attrOutcome, "not_held"),
		releaseError:    attribute.String(attrOutcome, "error"),
	}
)

// holdStarted counts the holding k, which an acquire just began.
func (t *telemetry) holdStarted(k holdingKey) {
	if !t.metrics {
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	if _, dup := t.holdings[k]; dup {
		t.mu.Unlock()
		return
	}
	t.holdings[k] = t.clock.Now()
	t.noteSeries(meterKind(k.kind), k.name)
	t.mu.Unlock()
}

// noteSeries makes warden.lock.held report the series of a holding that
// begins now, 0 once it ends, even when it ends before the next
// collection sees it; with lock names, it starts the series' loss count
// at 0 (zeroCounters starts the kinds' without names). t.mu is held.
func (t *telemetry) noteSeries(kind meterKind, name string) {
	if !t.withName {
		name = ""
	}
	s := series{kind, name}
	if _, seen := t.heldSeries[s]; !seen && t.withName {
		t.lost.Add(context.Background(), 0, t.addOptions(t.kinds[kind], name)...)
	}
	t.heldSeries[s] = struct{}{}
}

// zeroCounters reports warden.lock.lost and warden.renewal.failures at 0
// from the start, for every kind that is held (and so can be lost and is
// renewed by the watchdog): a counter that appeared only at its first
// increment, already at 1, would hide that increment from a rate or
// increase over it. With lock names the loss count of a kind and name
// starts at its first holding (noteSeries).
func (t *telemetry) zeroCounters() {
	ctx := context.Background()
	for k := range t.kinds {
		kind := meterKind(k)
		held := kind == meterMultiLock || kind == meterRedLock
		renewed := k < int(meterMultiLock) && messages.Kind(k).Held()
		if (held || renewed) && !t.withName {
			t.lost.Add(ctx, 0, t.kinds[k].add...)
		}
		if renewed {
			t.renewalFailures.Add(ctx, 0, t.kinds[k].add...)
		}
	}
}

// holdEnded ends the holding k as end says, if it is counted.
func (t *telemetry) holdEnded(k holdingKey, end holdEnd) {
	if !t.metrics {
		return
	}
	t.mu.Lock()
	start, ok := t.holdings[k]
	delete(t.holdings, k)
	t.mu.Unlock()
	if ok {
		t.recordEnd(meterKind(k.kind), k.name, start, end)
	}
}

// groupStarted counts a holding of a MultiLock or RedLock; nil when it is
// not counted.
func (t *telemetry) groupStarted(kind meterKind, name string) *groupHold {
	if !t.metrics {
		return nil
	}
	g := &groupHold{kind: kind, name: name, start: t.clock.Now()}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.groups[g] = struct{}{}
	t.noteSeries(kind, name)
	t.mu.Unlock()
	return g
}

// groupLost ends g, a MultiLock's or RedLock's holding, as lost (as
// closed when a member's Client was closed).
func (t *telemetry) groupLost(g *groupHold, closed bool) {
	end := endLost
	if closed {
		end = endClosed
	}
	t.groupEnded(g, end)
}

// groupEnded ends g as end says, once.
func (t *telemetry) groupEnded(g *groupHold, end holdEnd) {
	if g == nil {
		return
	}
	t.mu.Lock()
	_, ok := t.groups[g]
	delete(t.groups, g)
	t.mu.Unlock()
	if ok {
		t.recordEnd(g.kind, g.name, g.start, end)
	}
}

// closeAll ends every holding counted, as Close begins: closed.
func (t *telemetry) closeAll() {
	if !t.metrics {
		return
	}
	t.mu.Lock()
	t.closed = true
	holdings, groups := t.holdings, t.groups
	t.holdings, t.groups = map[holdingKey]time.Time{}, map[*groupHold]struct{}{}
	t.mu.Unlock()
	for k, start := range holdings {
		t.recordEnd(meterKind(k.kind), k.name, start, endClosed)
	}
	for g := range groups {
		t.recordEnd(g.kind, g.name, g.start, endClosed)
	}
}

// recordEnd records the end of a holding that began at start.
func (t *telemetry) recordEnd(kind meterKind, name string, start time.Time, end holdEnd) {
	ctx := context.Background()
	k := t.kinds[kind]
	t.holdDuration.Record(ctx, t.clock.Since(start).Seconds(),
		t.recordOptions(k.end[end], k, name, attribute.String(attrEnd, holdEndNames[end]))...)
	if end == endLost {
		t.lost.Add(ctx, 1, t.addOptions(k, name)...)
	}
}

// observe reports, at a collection, the holdings and waiting calls of
// each kind (of each kind and name, with WithMetricLockNames). The age of
// the oldest holding of each is its age group's (ageGroup.observe).
func (t *telemetry) observe(_ context.Context, o metric.Observer) error {
	t.mu.Lock()
	counts := make(map[series]int64, len(t.heldSeries))
	note := func(kind meterKind, name string) {
		if !t.withName {
			name = ""
		}
		s := series{kind, name}
		counts[s]++
		t.heldSeries[s] = struct{}{}
	}
	for k := range t.holdings {
		note(meterKind(k.kind), k.name)
	}
	for g := range t.groups {
		note(g.kind, g.name)
	}
	for s := range t.heldSeries {
		if _, ok := counts[s]; !ok {
			counts[s] = 0 // held before: 0 now
		}
	}
	waits := make(map[series]int64, len(t.namedWaits))
	for s, n := range t.namedWaits {
		waits[s] = n
	}
	t.mu.Unlock()
	if !t.withName {
		for k := range t.waits {
			if t.waitKinds[k].Load() {
				waits[series{kind: meterKind(k)}] = t.waits[k].Load()
			}
		}
	}
	for s, n := range counts {
		o.ObserveInt64(t.held, n, t.observeOptions(s)...)
	}
	for s, n := range waits {
		o.ObserveInt64(t.waiting, n, t.observeOptions(s)...)
	}
	return nil
}

// observeOptions are the options of an observation of s.
func (t *telemetry) observeOptions(s series) []metric.ObserveOption {
	k := t.kinds[s.kind]
	if !t.withName {
		return k.observed
	}
	return []metric.ObserveOption{metric.WithAttributes(k.kind, attribute.String(attrName, s.name))}
}

// renewalObserver is the engine's RenewalObserved: renewal, or nil when
// metrics are off.
func (t *telemetry) renewalObserver() func(time.Duration, []messages.Kind, error) {
	if !t.metrics {
		return nil
	}
	return t.renewal
}

// renewal records one renewal call of the engine's watchdog, which
// renewed locks of kinds: its duration and its failure count once under
// each of them.
func (t *telemetry) renewal(took time.Duration, kinds []messages.Kind, err error) {
	ctx := context.Background()
	for _, kind := range kinds {
		k := t.kinds[kind]
		t.renewalDuration.Record(ctx, took.Seconds(), k.record...)
		if err != nil {
			t.renewalFailures.Add(ctx, 1, k.add...)
		}
	}
}
