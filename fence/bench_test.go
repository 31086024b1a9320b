package fence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/warden-go/warden/fence"
	"github.com/warden-go/warden/internal/redistest"
)

// BenchmarkFencedSet measures a fenced Set against a plain SET on the
// same server in the same run: blocks of each, alternating, medians per
// write and their ratio (fenced/plain).
func BenchmarkFencedSet(b *testing.B) {
	rdb := redistest.Start(b).Client(b)
	g := fence.NewRedis(rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const writes = 100
	plain := func() time.Duration {
		start := time.Now()
		for range writes {
			if err := rdb.Set(ctx, "bench:plain", "value", 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	fenced := func() time.Duration {
		start := time.Now()
		for range writes {
			if err := g.Set(ctx, 7, "bench:fenced", "value", 0); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	plain() // the script loaded, the pool warm
	fenced()
	var ps, fs []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 { // each goes first every other time
			ps, fs = append(ps, plain()), append(fs, fenced())
		} else {
			fs, ps = append(fs, fenced()), append(ps, plain())
		}
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / writes
	}
	mp, mf := median(ps), median(fs)
	b.ReportMetric(mp, "ns/plain-set")
	b.ReportMetric(mf, "ns/fenced-set")
	b.ReportMetric(mf/mp, "fenced/plain")
}
