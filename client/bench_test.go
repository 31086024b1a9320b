package client_test

import (
	"context"
	"testing"

	"github.com/warden-go/warden/internal/bench"
	"github.com/warden-go/warden/internal/redistest"
)

// BenchmarkUncontendedLockUnlock measures one lock+unlock pair against two
// baselines on the same Redis, alternating in blocks within one run:
//
//   - 2xPING: the floor any lock+unlock pays, two round trips;
//   - scripts: the same two Lua scripts called directly from one goroutine,
//     with no engine (what a Redisson-style lock costs at least).
//
// The metrics are each one's mean time per pair, floor/warden (the share of
// the floor's speed reached; 1.0 = as fast as two PINGs) and
// scripts/warden (the share of the bare scripts' speed reached).
func BenchmarkUncontendedLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	c := realBenchClient(b, rdb)
	b.ResetTimer()
	u, err := bench.RunUncontended(context.Background(), c, rdb, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(u.Warden.Nanoseconds()), "warden-ns/pair")
	b.ReportMetric(float64(u.Ping.Nanoseconds()), "2xPING-ns/pair")
	b.ReportMetric(float64(u.Scripts.Nanoseconds()), "scripts-ns/pair")
	b.ReportMetric(u.FloorRatio(), "floor/warden")
	b.ReportMetric(u.ScriptsRatio(), "scripts/warden")
}

// BenchmarkLockUnlock is one lock+unlock pair of a watchdog-mode lock and
// nothing else, so that -benchmem reports the engine's own allocations per
// pair (BenchmarkUncontendedLockUnlock mixes in its baselines').
func BenchmarkLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	c := realBenchClient(b, srv.Client(b))
	l := c.Lock("bench:lock-unlock")
	ctx := context.Background()
	for range 100 { // scripts loaded, pools and workers warm
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
