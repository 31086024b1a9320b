package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// attempts counts, per acquire latch key (one per owner and side), the
// acquire attempts a Hooked Redis has seen answered.
type attempts struct {
	mu sync.Mutex
	n  map[string]int
}

func countAttempts(h *redistest.Hooked) *attempts {
	a := &attempts{n: map[string]int{}}
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		r := c.Run()
		if len(c.Keys) >= 2 {
			a.mu.Lock()
			a.n[c.Keys[1]]++
			a.mu.Unlock()
		}
		return r
	})
	return a
}

func (a *attempts) of(latch string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[latch]
}

// The read and the write side of one name are two key actors of an engine
// listening on one channel, redisson_rwlock:{name}. One unlock message on
// it wakes both: each tries again at once, though the holder elsewhere had
// a lease of an hour (the PTTL they sleep on) and the fake clock never
// moves. The side that loses that race gets in after the winner's unlock.
func TestOneUnlockMessageWakesEveryKeyActorOnTheChannel(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	h := redistest.NewHooked(rdb)
	e := startEngine(t, rdb, func(c *Config) { c.Redis = h })
	holder := startEngine(t, srv.Client(t))
	const name = "fan-out"
	ctx := context.Background()

	require.IsType(t, &messages.Acquired{}, holder.ask(t, &messages.Acquire{Name: name, Kind: messages.KindWriteLock,
		Owner: "holder", RequestID: "h", Lease: time.Hour}))
	tries := countAttempts(h)
	readLatch := redisio.AcquireLatchKey(name, "reader")
	writeLatch := redisio.AcquireLatchKey(name, redisio.WriteField("writer"))
	read := e.request(&messages.Acquire{Name: name, Kind: messages.KindReadLock, Owner: "reader", RequestID: "r",
		Lease: time.Minute})
	write := e.request(&messages.Acquire{Name: name, Kind: messages.KindWriteLock, Owner: "writer", RequestID: "w",
		Lease: time.Minute})
	// Each side is refused, subscribes, and is refused again by the attempt
	// its confirmed subscription wakes; then it sleeps on the hour's PTTL.
	require.Eventually(t, func() bool { return tries.of(readLatch) >= 2 && tries.of(writeLatch) >= 2 },
		5*time.Second, 2*time.Millisecond, "both sides refused after subscribing")
	require.Equal(t, map[string]int64{redisio.RWChannel(name): 1}, rdb.PubSubNumSub(ctx, redisio.RWChannel(name)).Val(),
		"the engine listens on the channel, on its one connection")
	assert.Eventually(t, func() bool { return e.keyActors(t) == 2 }, 2*time.Second, 5*time.Millisecond,
		"a key actor for each side")
	beforeRead, beforeWrite := tries.of(readLatch), tries.of(writeLatch)

	require.IsType(t, &messages.Released{}, holder.ask(t, &messages.Release{Name: name, Kind: messages.KindWriteLock,
		Owner: "holder", RequestID: "hr"}))
	woken := within(5*time.Second, func() bool { return tries.of(readLatch) > beforeRead && tries.of(writeLatch) > beforeWrite })
	require.True(t, woken, "each side tries again after the one unlock message: read %d→%d, write %d→%d attempts in 5 s",
		beforeRead, tries.of(readLatch), beforeWrite, tries.of(writeLatch))

	// One side won; its unlock lets the other in, again by a message.
	first := either(t, read, write, 5*time.Second, "the first side in")
	require.IsType(t, &messages.Acquired{}, first)
	won := first.(*messages.Acquired)
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: name, Kind: won.Kind, Owner: won.Owner,
		RequestID: "u1"}))
	second := either(t, read, write, 5*time.Second, "the second side in")
	require.IsType(t, &messages.Acquired{}, second)
	other := second.(*messages.Acquired)
	assert.NotEqual(t, won.Kind, other.Kind, "both sides got in, one after the other")
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: name, Kind: other.Kind, Owner: other.Owner,
		RequestID: "u2"}))
	assert.Zero(t, rdb.Exists(ctx, name).Val())
}

// either returns the next reply of either probe, waiting up to d.
func either(t *testing.T, a, b <-chan any, d time.Duration, what string) any {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m := <-a:
		return m
	case m := <-b:
		return m
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// within polls cond every 2 ms for up to d and tells whether it held.
func within(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(2 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}
