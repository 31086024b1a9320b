package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/warden-go/warden/internal/redistest"
)

// BenchmarkUncontendedLockUnlock measures one lock+unlock pair against the
// floor any lock+unlock pays on the same Redis: two PING round trips. The
// two alternate in blocks within one run; the metrics are each one's mean
// time and floor/warden, the share of the floor's speed reached (1.0 = as
// fast as two PINGs).
func BenchmarkUncontendedLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	c := realBenchClient(b, rdb)
	ctx := context.Background()
	l := c.Lock("bench:uncontended")
	const block = 200
	var lockTime, pingTime time.Duration
	var pairs int
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		start := time.Now()
		for range n {
			if err := l.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		lockTime += time.Since(start)
		start = time.Now()
		for range n {
			if err := rdb.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
		pingTime += time.Since(start)
		pairs += n
	}
	b.StopTimer()
	b.ReportMetric(float64(lockTime.Nanoseconds())/float64(pairs), "lock+unlock-ns")
	b.ReportMetric(float64(pingTime.Nanoseconds())/float64(pairs), "2xPING-ns")
	b.ReportMetric(float64(pingTime)/float64(lockTime), "floor/warden")
}
