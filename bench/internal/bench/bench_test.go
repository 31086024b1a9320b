package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/bench/internal/bench"
	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

// contenders starts a Redis and every contender on it, closed at cleanup.
func contenders(tb testing.TB) ([]*bench.Contender, *redistest.Server) {
	tb.Helper()
	srv := redistest.Start(tb)
	cs, err := bench.NewContenders(srv.Addr(), time.Millisecond)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		for _, c := range cs {
			require.NoError(tb, c.Close(context.Background()))
		}
	})
	return cs, srv
}

// BenchmarkLockUnlock is workload (a) under go test: one goroutine, one
// name, lock+unlock, per library and for the 2xPING floor. It reports
// ns/pair (wall time per pair, without the 20-pair warm-up per goroutine
// that ns/op includes), the commands sent and the calls Redis executed per
// pair. Compare the libraries within one run, not across machines.
func BenchmarkLockUnlock(b *testing.B) {
	benchThroughput(b, 1)
}

// BenchmarkLockUnlockParallel is workload (b): 16 goroutines, each on its
// own name; ns/pair is wall time per pair, all goroutines together.
func BenchmarkLockUnlockParallel(b *testing.B) {
	benchThroughput(b, 16)
}

func benchThroughput(b *testing.B, goroutines int) {
	cs, srv := contenders(b)
	stats := srv.Client(b)
	for _, c := range cs {
		if !c.Role.Uncontended() {
			continue
		}
		b.Run(c.Name, func(b *testing.B) {
			t, err := bench.RunThroughput(context.Background(), c, stats, "bench:"+b.Name(), goroutines, 0, max(b.N, goroutines))
			require.NoError(b, err)
			b.ReportMetric(float64(t.Elapsed.Nanoseconds())/float64(t.Pairs), "ns/pair")
			b.ReportMetric(t.SentPerPair(), "cmds/pair")
			b.ReportMetric(t.ServerPerPair(), "calls/pair")
		})
	}
}

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
	c, err := client.New(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
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
