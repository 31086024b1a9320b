package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// Paired is one run of a warden lock kind and its baseline, back to back
// on one client: workloads (g) and (h).
type Paired struct {
	Kind, Base Throughput
}

// Ratio is the kind's pairs per second over the baseline's.
func (p Paired) Ratio() float64 {
	if b := p.Base.PerSecond(); b > 0 {
		return p.Kind.PerSecond() / b
	}
	return 0
}

// StripedKeys is how many distinct keys workload (g) locks through the
// striped lock.
const StripedKeys = 10000

// RunStriped runs workload (g): goroutines goroutines each lock and unlock
// the stripe of a random key (one of StripedKeys, drawn from a seeded
// source) in a loop for d, through a StripedLock of stripes stripes
// ("<prefix>:s<stripes>"), and the same on one lock (a StripedLock of 1
// stripe, the same code path), back to back on one warden client. stats is
// the client INFO is read on.
func RunStriped(ctx context.Context, addr string, stats redis.UniversalClient, prefix string, goroutines, stripes int, d time.Duration) (Paired, error) {
	c, rdb, cnt, err := NewWarden(addr)
	if err != nil {
		return Paired{}, err
	}
	defer rdb.Close()
	defer c.Close(ctx)
	run := func(n int) (Throughput, error) {
		s := c.StripedLock(prefix+":s"+strconv.Itoa(n), n)
		if err := s.Err(); err != nil {
			return Throughput{}, err
		}
		return runMutexes(ctx, cnt, stats, goroutines, d, func(g int) func() Mutex {
			rnd := rand.New(rand.NewPCG(uint64(g), uint64(n)))
			return func() Mutex {
				return wardenMutex{s.For("product:" + strconv.Itoa(rnd.IntN(StripedKeys)))}
			}
		})
	}
	var p Paired
	if p.Base, err = run(1); err != nil {
		return p, fmt.Errorf("one lock: %w", err)
	}
	if p.Kind, err = run(stripes); err != nil {
		return p, fmt.Errorf("%d stripes: %w", stripes, err)
	}
	return p, nil
}

// runMutexes runs goroutines goroutines for d, each locking and unlocking
// in a loop the Mutex its next function (made once per goroutine by
// next(g)) returns, and measures them. A warm-up pair per goroutine runs
// first.
func runMutexes(ctx context.Context, cnt *Counter, stats redis.UniversalClient, goroutines int, d time.Duration, next func(g int) func() Mutex) (Throughput, error) {
	return runPairs(ctx, cnt, stats, "", goroutines, d, 0, 1, next)
}

// GroupValues is how many values each lock+unlock of workload (h) takes.
const GroupValues = 8

// RunGroup runs workload (h): goroutines goroutines each lock and unlock
// GroupValues values in a loop for d, through a group lock (its group
// "<prefix>:g<i>", the values "v0".."v7": one script a call) and through a
// MultiLock over one reentrant lock per value ("<prefix>:m<i>:v0".., one
// script per member), back to back on one warden client; Kind is the
// group lock, Base the MultiLock. stats is the client INFO is read on.
func RunGroup(ctx context.Context, addr string, stats redis.UniversalClient, prefix string, goroutines int, d time.Duration) (Paired, error) {
	c, rdb, cnt, err := NewWarden(addr)
	if err != nil {
		return Paired{}, err
	}
	defer rdb.Close()
	defer c.Close(ctx)
	values := make([]string, GroupValues)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	var p Paired
	p.Kind, err = runMutexes(ctx, cnt, stats, goroutines, d, func(g int) func() Mutex {
		m := wardenMutex{c.GroupLock(prefix+":g"+strconv.Itoa(g), values...)}
		return func() Mutex { return m }
	})
	if err != nil {
		return p, fmt.Errorf("group lock: %w", err)
	}
	p.Base, err = runMutexes(ctx, cnt, stats, goroutines, d, func(g int) func() Mutex {
		locks := make([]*client.Lock, len(values))
		for i, v := range values {
			locks[i] = c.Lock(prefix + ":m" + strconv.Itoa(g) + ":" + v)
		}
		m := client.NewMultiLock(locks...) // its own Lock and Unlock
		return func() Mutex { return m }
	})
	if err != nil {
		return p, fmt.Errorf("multilock: %w", err)
	}
	return p, nil
}
