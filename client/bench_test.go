package client_test

import (
	"context"
	"testing"

	"github.com/warden-go/warden/internal/redistest"
)

// BenchmarkLockUnlock is one lock+unlock pair of a watchdog-mode lock and
// nothing else, so that -benchmem reports the engine's own allocations per
// pair (the benchmark module's BenchmarkUncontendedLockUnlock mixes in its
// baselines').
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
