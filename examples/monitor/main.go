// Command monitor exports warden's OpenTelemetry metrics to Prometheus: a
// service that takes a few locks in a loop, and serves the metrics of its
// warden Client on /metrics through the OpenTelemetry Prometheus exporter.
//
//	go run ./examples/monitor -listen 127.0.0.1:9464 -for 30s
//	curl -s 127.0.0.1:9464/metrics | grep '^warden_'
//
// One worker holds a report lock for the whole run, so that
// warden_lock_held_age_max_seconds keeps growing, as a stuck holder's
// would; the others take an orders lock by turns (some give up after a
// short wait: the timeout outcome) and permits of a semaphore. -for (or
// MONITOR_FOR) ends the run after a while; without it the service runs
// until interrupted.
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9464", "where /metrics is served")
	runFor := flag.Duration("for", envDuration("MONITOR_FOR"), "stop after this long (0: until interrupted); also MONITOR_FOR")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *runFor)
		defer cancel()
	}
	exampleredis.Main(func() error { return run(ctx, *listen, nil) })
}

// envDuration reads a duration from the environment variable name (0 when
// unset or malformed).
func envDuration(name string) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil {
		return 0
	}
	return d
}

// run serves /metrics on listen and takes locks until ctx ends. ready,
// when set, is told the address the server listens on.
func run(ctx context.Context, listen string, ready func(addr string)) error {
	// The exporter is a metric reader with a Prometheus registry of its
	// own; the MeterProvider feeds it, and the Client records on it.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}()
	fmt.Printf("metrics: http://%s/metrics\n", ln.Addr())

	rdb, where, stopRedis, err := exampleredis.Connect(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()
	fmt.Println("redis:", where)
	// A short watchdog, so that renewals show within seconds.
	c, err := client.New(rdb, client.WithMeterProvider(mp), client.WithService("monitor-example"),
		client.WithWatchdogTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }()
	if ready != nil {
		ready(ln.Addr().String())
	}

	err = work(ctx, c)
	// The semaphore is the example's own: it leaves nothing behind (Delete
	// removes the total warden records beside it too).
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, _ = c.Semaphore(exportsName).Delete(dctx)
	cancel()
	if cerr := c.Close(context.Background()); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// exportsName is the example's semaphore.
const exportsName = "monitor:exports"

// work runs the workers until ctx ends.
func work(ctx context.Context, c *client.Client) error {
	sem := c.Semaphore(exportsName)
	if _, err := sem.TrySetPermits(ctx, 2); err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, 5)
	loop := func(name string, step func() error) {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := step(); err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		})
	}
	// The report lock is taken once and held until the end.
	report := c.Lock("monitor:report")
	if err := report.Lock(ctx); err != nil {
		return err
	}
	defer func() { _ = report.Unlock(context.Background()) }()
	for i := range 3 {
		orders := c.Lock("monitor:orders")
		loop(fmt.Sprintf("orders-%d", i), func() error {
			ok, err := orders.TryLockWait(ctx, 40*time.Millisecond, 0)
			if err != nil || !ok {
				return err // gave up: a timeout outcome
			}
			pause(ctx, 30*time.Millisecond)
			return orders.Unlock(context.Background())
		})
	}
	loop("exports", func() error {
		if err := sem.Acquire(ctx, 1); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pause(ctx, 20*time.Millisecond)
		return sem.Release(context.Background(), 1)
	})
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
