package client_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/redisio"
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
	scripts, err := redisio.NewScripts("publish")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	l := c.Lock("bench:uncontended")
	const block = 200
	var lockTime, pingTime, scriptTime time.Duration
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
		start = time.Now()
		for i := range n {
			id := strconv.Itoa(done + i)
			if _, err := scripts.Acquire(ctx, rdb, "bench:bare", "bare-owner", id, 30*time.Second); err != nil {
				b.Fatal(err)
			}
			if _, _, err := scripts.Unlock(ctx, rdb, "bench:bare", "bare-owner", id, 30*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		scriptTime += time.Since(start)
		pairs += n
	}
	b.StopTimer()
	b.ReportMetric(float64(lockTime.Nanoseconds())/float64(pairs), "warden-ns/pair")
	b.ReportMetric(float64(pingTime.Nanoseconds())/float64(pairs), "2xPING-ns/pair")
	b.ReportMetric(float64(scriptTime.Nanoseconds())/float64(pairs), "scripts-ns/pair")
	b.ReportMetric(float64(pingTime)/float64(lockTime), "floor/warden")
	b.ReportMetric(float64(scriptTime)/float64(lockTime), "scripts/warden")
}
