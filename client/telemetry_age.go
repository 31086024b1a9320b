package client

import (
	"context"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// ageGroups are the Clients that share a MeterProvider, by provider.
// warden.lock.held.age.max is observed once per provider, as the oldest
// holding of all of them: a gauge that several callbacks observe with the
// same attributes keeps the last value, so a callback per Client would
// report the oldest holding of whichever Client the SDK asked last (the
// sums, warden.lock.held and warden.lock.waiting, add up and need no
// group).
var ageGroups = struct {
	mu sync.Mutex
	m  map[metric.MeterProvider]*ageGroup
}{m: map[metric.MeterProvider]*ageGroup{}}

// ageGroup is the Clients of one MeterProvider and the callback that
// observes their age gauge.
type ageGroup struct {
	mu      sync.Mutex
	members map[*telemetry]struct{}
	reg     metric.Registration
	gone    bool // emptied before its callback was registered
}

// joinAgeGroup makes t's holdings count in the age gauge of mp, whose
// meter is m. A provider that cannot be a map key gets a callback per
// Client.
func (t *telemetry) joinAgeGroup(mp metric.MeterProvider, m metric.Meter) error {
	if !reflect.TypeOf(mp).Comparable() {
		alone := &ageGroup{members: map[*telemetry]struct{}{t: {}}}
		reg, err := m.RegisterCallback(alone.observe, t.ageGauge)
		t.ageGroup, alone.reg = alone, reg
		return err
	}
	ageGroups.mu.Lock()
	g := ageGroups.m[mp]
	first := g == nil
	if first {
		g = &ageGroup{members: map[*telemetry]struct{}{}}
		ageGroups.m[mp] = g
	}
	g.mu.Lock()
	g.members[t] = struct{}{}
	g.mu.Unlock()
	ageGroups.mu.Unlock()
	t.ageGroup, t.ageProvider = g, mp
	if !first {
		return nil
	}
	// Registered outside the locks: the SDK holds its own while it runs
	// the callbacks, and the callback takes g.mu.
	reg, err := m.RegisterCallback(g.observe, t.ageGauge)
	if err != nil {
		t.leaveAgeGroup()
		return err
	}
	g.mu.Lock()
	if g.gone {
		g.mu.Unlock()
		_ = reg.Unregister()
		return nil
	}
	g.reg = reg
	g.mu.Unlock()
	return nil
}

// leaveAgeGroup takes t's holdings out of the age gauge; the last Client
// of a provider to leave ends its callback.
func (t *telemetry) leaveAgeGroup() {
	g := t.ageGroup
	if g == nil {
		return
	}
	t.ageGroup = nil
	if t.ageProvider == nil { // alone
		if g.reg != nil {
			_ = g.reg.Unregister()
		}
		return
	}
	ageGroups.mu.Lock()
	g.mu.Lock()
	delete(g.members, t)
	var reg metric.Registration
	if len(g.members) == 0 {
		if ageGroups.m[t.ageProvider] == g {
			delete(ageGroups.m, t.ageProvider)
		}
		reg, g.reg, g.gone = g.reg, nil, true
	}
	g.mu.Unlock()
	ageGroups.mu.Unlock()
	if reg != nil {
		_ = reg.Unregister()
	}
}

// observe reports, per series, the age of the oldest holding of every
// member.
func (g *ageGroup) observe(_ context.Context, o metric.Observer) error {
	g.mu.Lock()
	members := make([]*telemetry, 0, len(g.members))
	for t := range g.members {
		members = append(members, t)
	}
	g.mu.Unlock()
	type oldest struct {
		age time.Duration
		t   *telemetry
	}
	ages := map[series]oldest{}
	for _, t := range members {
		now := t.clock.Now()
		for s, start := range t.oldestHoldings() {
			if a, ok := ages[s]; !ok || now.Sub(start) > a.age {
				ages[s] = oldest{now.Sub(start), t}
			}
		}
	}
	for s, a := range ages {
		o.ObserveFloat64(a.t.ageGauge, a.age.Seconds(), a.t.observeOptions(s)...)
	}
	return nil
}

// oldestHoldings is when the oldest holding of each series began, for the
// series that have a holding now.
func (t *telemetry) oldestHoldings() map[series]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[series]time.Time{}
	note := func(kind meterKind, name string, start time.Time) {
		if !t.withName {
			name = ""
		}
		s := series{kind, name}
		if old, ok := out[s]; !ok || start.Before(old) {
			out[s] = start
		}
	}
	for k, start := range t.holdings {
		note(meterKind(k.kind), k.name, start)
	}
	for g := range t.groups {
		note(g.kind, g.name, g.start)
	}
	return out
}
