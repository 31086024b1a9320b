package client_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// Scale: many names touched once each leave (almost) nothing behind once
// their key actors passivate.

const (
	// scaleNames is how many distinct names TestHundredThousandNamesReturnMemory
	// locks and unlocks, once each.
	scaleNames = 100_000
	// scaleWorkers is how many goroutines touch them. Under -race on 2
	// cores 64 touch 100,000 names in about 35 s, 16 in about 54 s; more
	// than 64 gain little.
	scaleWorkers = 64
	// scaleIdle is the idle timeout: a name's key actor passivates this
	// long after its unlock.
	scaleIdle = 200 * time.Millisecond
	// scaleSlack is the relative part of the bound: the heap may be 10%
	// above the baseline (what the test process's own allocations vary by
	// from one collection to the next).
	scaleSlack = 0.10
	// perNameAllowance is the absolute part of the bound, per name touched.
	// What a passivated name leaves is room in protoactor's process
	// registry: 1,024 shards of 32 Go maps each, and a Go map never gives
	// back the 8-slot group (288 B) its first entry made. That is at most
	// 32,768 × 288 B = 9 MiB, reached once every map has held an entry:
	// 94 B a name at 100,000 names (measured 88–90 B; 4.1 MiB after 20,000
	// names, 7.0 MiB after 50,000, 8.8 MiB after 200,000, as the hit maps
	// predict). A key actor kept after passivation costs 1,368 B a name
	// (protoactor's child set did that before it was fixed) and a live one
	// about 3 KB, so 128 B a name allows the registry's room and still
	// fails on either leak, or on a leak of more than about 40 B a name.
	perNameAllowance = 128
)

// heapAfterGC is the live heap after two collections (the second frees
// what finalizers and cleanups of the first released).
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// keyActors asks the engine how many key actors are alive.
func keyActors(t *testing.T, sys *actor.ActorSystem, c *client.Client) int {
	t.Helper()
	n, err := sys.Root.RequestFuture(c.PID(), &actors.KeyActorCount{}, 10*time.Second).Result()
	require.NoError(t, err)
	return n.(int)
}

// touch locks (watchdog mode) and unlocks "<prefix>:<i>" for every i below n, with
// scaleWorkers goroutines.
func touch(t *testing.T, c *client.Client, prefix string, n int) {
	t.Helper()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for range scaleWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed.Load() > 0 {
					return
				}
				l := c.Lock(prefix + ":" + strconv.Itoa(i))
				if err := l.Lock(ctx); err != nil { // watchdog mode: the renewer's state for the name must go too
					failed.Add(1)
					t.Errorf("lock %d: %v", i, err)
					return
				}
				if err := l.Unlock(ctx); err != nil {
					failed.Add(1)
					t.Errorf("unlock %d: %v", i, err)
					return
				}
			}
		})
	}
	await.Group(t, &wg, 5*time.Minute, "the goroutines touching the names")
	require.Zero(t, failed.Load(), "every lock and unlock succeeded")
}

// awaitPassivated polls the engine's key actor count until it is 0.
func awaitPassivated(t *testing.T, sys *actor.ActorSystem, c *client.Client, max time.Duration) {
	t.Helper()
	deadline := time.Now().Add(max)
	for {
		n := keyActors(t, sys, c)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d key actors still alive %v after the last touch (idle timeout %v)", n, max, scaleIdle)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// 100,000 distinct names touched once each (lock + unlock through the
// Client): once every key actor has passivated, the heap is back near
// where it was before. What may stay is stated in perNameAllowance.
func TestHundredThousandNamesReturnMemory(t *testing.T) {
	srv := redistest.Start(t)
	c, sys, _ := ownSystemClient(t, srv.Client(t), client.WithIdleTimeout(scaleIdle))

	// Warm up: the connection pool grows to the workers' needs and the
	// scripts are loaded, so the baseline is the started client at work,
	// not one that has yet to open its connections.
	touch(t, c, "warm", 1000)
	awaitPassivated(t, sys, c, 10*time.Second)
	baseline := heapAfterGC()

	start := time.Now()
	touch(t, c, "scale", scaleNames)
	touched := time.Now()
	alive := keyActors(t, sys, c)
	awaitPassivated(t, sys, c, 30*time.Second)
	passivated := time.Now()
	after := heapAfterGC()

	bound := uint64(float64(baseline)*(1+scaleSlack)) + perNameAllowance*scaleNames
	left := float64(int64(after)-int64(baseline)) / scaleNames
	t.Logf("%d names touched in %v (%.0f names/s, %d workers); %d key actors alive right after, none %v later (idle timeout %v)",
		scaleNames, touched.Sub(start).Round(time.Millisecond), scaleNames/touched.Sub(start).Seconds(), scaleWorkers,
		alive, passivated.Sub(touched).Round(time.Millisecond), scaleIdle)
	t.Logf("HeapAlloc after GC: baseline %.1f MiB, after passivation %.1f MiB (%.2fx, %+.0f B a name); bound %.1f MiB (baseline +%.0f%% + %d B a name)",
		mib(baseline), mib(after), float64(after)/float64(baseline), left, mib(bound), 100*scaleSlack, perNameAllowance)
	assert.LessOrEqual(t, after, bound, "memory returns near the baseline once the key actors passivated")
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
