package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/client"
)

// Passivation is one run of workload (f): one warden client touches many
// names once each, then leaves them idle until the engine frees their
// state.
type Passivation struct {
	Names       int
	IdleTimeout time.Duration
	// Start, Touched and Passivated are readings before touching, right
	// after the last name was touched, and once the engine had no key
	// actor left (or gave up waiting: Passivated.KeyActors > 0).
	Start, Touched, Passivated MemReading
	Touch                      time.Duration // to touch all names
	Passivate                  time.Duration // from the last touch to no key actor left
}

// MemReading is the process's memory, after GC, and the engine's key
// actors at one moment.
type MemReading struct {
	HeapAlloc, HeapInuse uint64
	Goroutines           int
	KeyActors            int
}

// TouchWorkers is how many goroutines touch the names of workload (f).
const TouchWorkers = 16

// RunPassivation touches names names "<prefix>:<i>" (one lock+unlock each,
// TouchWorkers goroutines) with a warden client whose idle timeout is idle, then
// waits up to idle + wait for its key actors to passivate.
func RunPassivation(ctx context.Context, addr, prefix string, names int, idle, wait time.Duration) (Passivation, error) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()
	c, rdb, _, err := NewWarden(addr, client.WithIdleTimeout(idle), client.WithActorSystem(sys))
	if err != nil {
		return Passivation{}, err
	}
	defer rdb.Close()
	defer c.Close(ctx)
	p := Passivation{Names: names, IdleTimeout: idle}
	keyActors := func() (int, error) {
		n, err := sys.Root.RequestFuture(c.PID(), &actors.KeyActorCount{}, 10*time.Second).Result()
		if err != nil {
			return 0, fmt.Errorf("warden: count key actors: %w", err)
		}
		count, _ := n.(int)
		return count, nil
	}
	read := func() (MemReading, error) {
		n, err := keyActors()
		m := memStats()
		return MemReading{HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, Goroutines: runtime.NumGoroutine(), KeyActors: n}, err
	}
	if p.Start, err = read(); err != nil {
		return p, err
	}
	start := time.Now()
	if err := parallel(TouchWorkers, names, func(i int) error {
		return pair(ctx, c.Lock(prefix+":"+strconv.Itoa(i)))
	}); err != nil {
		return p, fmt.Errorf("warden: touch: %w", err)
	}
	touched := time.Now()
	p.Touch = touched.Sub(start)
	if p.Touched, err = read(); err != nil {
		return p, err
	}
	for deadline := touched.Add(idle + wait); ; sleep(ctx, 100*time.Millisecond) {
		n, err := keyActors()
		if err != nil {
			return p, err
		}
		if n == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	p.Passivate = time.Since(touched)
	p.Passivated, err = read()
	return p, err
}
