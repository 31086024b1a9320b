package client_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redisproc"
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

// BenchmarkLocalDrain measures how fast a lock passes down a queue of
// local waiters: 32 goroutines of one Client queue on one name while a
// holder keeps it, then the holder unlocks and each waiter, once it holds,
// unlocks at once. µs/waiter is the queue's drain time over its waiters:
// one handoff each (the unlock and the next waiter's acquire in one round
// trip), for the lock and the fair lock.
func BenchmarkLocalDrain(b *testing.B) {
	srv := redistest.Start(b)
	c := realBenchClient(b, srv.Client(b))
	rdb := srv.Client(b)
	ctx := context.Background()
	const waiters = 32
	for _, kind := range []string{"lock", "fair"} {
		b.Run(kind, func(b *testing.B) {
			name := "bench:drain:" + kind
			lock := func() *client.Lock {
				if kind == "fair" {
					return c.FairLock(name)
				}
				return c.Lock(name)
			}
			waiting := func() int64 {
				if kind == "fair" {
					return rdb.LLen(ctx, "redisson_lock_queue:{"+name+"}").Val()
				}
				return rdb.PubSubNumSub(ctx, "redisson_lock__channel:{"+name+"}").Val()["redisson_lock__channel:{"+name+"}"]
			}
			var drained time.Duration
			for range b.N {
				holder := lock()
				if err := holder.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				errs := make(chan error, waiters)
				for range waiters {
					go func() {
						l := lock()
						err := l.Lock(ctx)
						if err == nil {
							err = l.Unlock(ctx)
						}
						errs <- err
					}()
				}
				// A lock's local waiters wait in the engine (one
				// subscription); a fair lock's queue in Redis.
				for want := int64(waiters); kind == "lock" && waiting() < 1 || kind == "fair" && waiting() < want; {
					select {
					case err := <-errs: // nothing ends while the holder holds, but a failure
						b.Fatalf("a waiter ended before the unlock: %v", err)
					case <-time.After(time.Millisecond):
					}
				}
				time.Sleep(5 * time.Millisecond) // every waiter queued in the engine too
				start := time.Now()
				if err := holder.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				for range waiters {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				drained += time.Since(start)
			}
			b.ReportMetric(float64(drained.Microseconds())/float64(b.N*waiters), "µs/waiter")
		})
	}
}

// BenchmarkLockUnlockTelemetry is the uncontended lock+unlock pair with
// metrics off (no-op providers) and on (the OpenTelemetry SDK's
// MeterProvider with a ManualReader), and with tracing on too (the SDK's
// TracerProvider, every span sampled, none exported), in one run on one
// server: compare the sub-benchmarks' ns/op for the overhead. "default" is
// a Client without telemetry options in a program that set no global
// providers.
func BenchmarkLockUnlockTelemetry(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	sdkMeters := func() metric.MeterProvider {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		return mp
	}
	sdkTracers := func() trace.TracerProvider {
		tp := sdktrace.NewTracerProvider()
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	for _, bc := range []struct {
		name string
		mp   func() metric.MeterProvider
		tp   func() trace.TracerProvider
	}{
		{"off", func() metric.MeterProvider { return metricnoop.NewMeterProvider() }, func() trace.TracerProvider { return tracenoop.NewTracerProvider() }},
		{"default", otel.GetMeterProvider, otel.GetTracerProvider}, // the global providers, none set
		{"metrics", sdkMeters, func() trace.TracerProvider { return tracenoop.NewTracerProvider() }},
		{"metrics+tracing", sdkMeters, sdkTracers},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := client.New(rdb, client.WithMeterProvider(bc.mp()), client.WithTracerProvider(bc.tp()))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close(context.Background()) }()
			l := c.Lock("bench:telemetry")
			ctx := context.Background()
			pair := func() {
				if err := l.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			for range 100 {
				pair()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				pair()
			}
		})
	}
}

// BenchmarkMetricsOverhead measures the metrics' overhead on the
// uncontended lock+unlock pair against metrics off, interleaved: each
// iteration is a block of pairs on a Client with no-op providers and one
// on a Client whose MeterProvider is the OpenTelemetry SDK's (with a
// ManualReader), in turns, so both see the same machine load. It reports the
// median block's ns per pair of each, and their ratio on/off.
func BenchmarkMetricsOverhead(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	noTraces := client.WithTracerProvider(tracenoop.NewTracerProvider())
	off, err := client.New(rdb, client.WithMeterProvider(metricnoop.NewMeterProvider()), noTraces)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = off.Close(context.Background()) }()
	on, err := client.New(rdb, client.WithMeterProvider(mp), noTraces)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = on.Close(context.Background()) }()
	ctx := context.Background()
	const pairs = 100
	block := func(l *client.Lock) time.Duration {
		start := time.Now()
		for range pairs {
			if err := l.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	lOff, lOn := off.Lock("bench:metrics-off"), on.Lock("bench:metrics-on")
	block(lOff) // scripts loaded, pools and workers warm
	block(lOn)
	var offs, ons []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 { // each goes first every other time
			offs = append(offs, block(lOff))
			ons = append(ons, block(lOn))
		} else {
			ons = append(ons, block(lOn))
			offs = append(offs, block(lOff))
		}
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / pairs
	}
	mOff, mOn := median(offs), median(ons)
	b.ReportMetric(mOff, "ns/pair-off")
	b.ReportMetric(mOn, "ns/pair-on")
	b.ReportMetric(mOn/mOff, "on/off")
}

// BenchmarkLockUnlockParallelCluster is workload (b) on a 3-master Redis
// Cluster: 16 goroutines lock and unlock 16 names, all of one hash slot
// ("{bench}:0" ...: their concurrent calls go as batch script calls on
// that slot's master) or each of its own ("bench:0" ...: every call on
// its own). It reports Redis's CPU a pair (every master's), this
// process's (getrusage), the client's, and the scripts Redis ran a pair.
func BenchmarkLockUnlockParallelCluster(b *testing.B) {
	cl := redistest.StartCluster(b, 3)
	cc := cl.Client(b)
	c, err := client.New(cc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	var nodes []*redis.Client
	for _, n := range cl.Nodes() {
		nodes = append(nodes, n.Client(b))
	}
	ctx := context.Background()
	for _, layout := range []struct{ name, format string }{{"one-slot", "{bench}:%d"}, {"spread", "bench:%d"}} {
		b.Run(layout.name, func(b *testing.B) {
			locks := make([]*client.Lock, 16)
			for i := range locks {
				locks[i] = c.Lock(fmt.Sprintf(layout.format, i))
				if err := locks[i].Lock(ctx); err != nil { // key actors live, scripts loaded
					b.Fatal(err)
				}
				if err := locks[i].Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int32
			redisBefore, scriptsBefore := clusterStats(b, nodes)
			clientBefore := processCPU(b)
			b.ResetTimer()
			b.SetParallelism(8) // 16 goroutines on the machine's 2 CPUs
			b.RunParallel(func(pb *testing.PB) {
				l := locks[int(next.Add(1)-1)%len(locks)]
				for pb.Next() {
					if err := l.Lock(ctx); err != nil {
						b.Error(err)
						return
					}
					if err := l.Unlock(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			clientCPU := processCPU(b) - clientBefore
			redisCPU, scripts := clusterStats(b, nodes)
			b.ReportMetric(float64((redisCPU-redisBefore).Microseconds())/float64(b.N), "redis-µs/pair")
			b.ReportMetric(float64(clientCPU.Microseconds())/float64(b.N), "client-µs/pair")
			b.ReportMetric(float64(scripts-scriptsBefore)/float64(b.N), "scripts/pair")
		})
	}
}

// clusterStats is the CPU the servers nodes have used (INFO cpu's
// used_cpu_user and used_cpu_sys) and the scripts they have run
// (scriptRuns).
func clusterStats(b *testing.B, nodes []*redis.Client) (cpu time.Duration, scripts int64) {
	for _, n := range nodes {
		fields := redisproc.InfoFields(n.Info(context.Background(), "cpu").Val())
		for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
			s, err := strconv.ParseFloat(fields[k], 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", k, err)
			}
			cpu += time.Duration(s * float64(time.Second))
		}
		scripts += scriptRuns(b, n)
	}
	return cpu, scripts
}

// processCPU is the CPU this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
