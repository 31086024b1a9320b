package actors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
)

// renewerEngine is an engine on a hooked client whose renewer's register,
// pause and unregister messages come out on the returned channel.
func renewerEngine(t *testing.T) (*engine, *redistest.Hooked, <-chan any) {
	rdb := redistest.Start(t).Client(t)
	h := redistest.NewHooked(rdb)
	got := make(chan any, 64)
	e := startEngine(t, rdb, func(c *Config) {
		c.Redis = h
		c.renewerGot = func(m any) { got <- m }
	})
	return e, h, got
}

// nothingFor fails if the renewer receives a message within d.
func nothingFor(t *testing.T, got <-chan any, d time.Duration, why string) {
	t.Helper()
	select {
	case m := <-got:
		t.Fatalf("the renewer got %T: %s", m, why)
	case <-time.After(d):
	}
}

func blockUntil(t *testing.T, e *engine, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.clock.BlockUntilContext(ctx, n))
}

// A watchdog-mode lock taken and released within registerDelay costs the
// renewer no message; one held past it is registered then, renewed at the
// renewer's next tick, and unregistered by its unlock.
func TestShortHoldingsNeverReachTheRenewer(t *testing.T) {
	e, h, got := renewerEngine(t)
	for i := range 20 {
		id := string(rune('a' + i))
		require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "short", Owner: "o", RequestID: id}))
		require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "short", Owner: "o", RequestID: id + "r"}))
	}
	nothingFor(t, got, 200*time.Millisecond, "every holding ended within its delay")

	renewed := make(chan struct{}, 16)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Renews() {
			renewed <- struct{}{}
		}
		return c.Run()
	})
	require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "long", Owner: "o", RequestID: "l"}))
	blockUntil(t, e, 1) // the registration's delay
	e.clock.Advance(registerDelay(30*time.Second) - time.Millisecond)
	nothingFor(t, got, 100*time.Millisecond, "before the delay passed")
	e.clock.Advance(time.Millisecond)
	reg := (*registration)(await.Value(t, got, 5*time.Second, "the registration").(*register))
	require.False(t, reg.paused)
	blockUntil(t, e, 2) // the renewer's tick and expiry
	e.clock.Advance(10 * time.Second)
	await.Value(t, renewed, 5*time.Second, "the renewal")
	require.IsType(t, &messages.Released{}, e.ask(t, &messages.Release{Name: "long", Owner: "o", RequestID: "lr"}))
	require.IsType(t, &pause{}, await.Value(t, got, 5*time.Second, "the pause while the unlock is in flight"))
	require.IsType(t, &unregister{}, await.Value(t, got, 5*time.Second, "the unregister"))
}

// A holding whose unlock failed within its delay is no longer renewed,
// but its lease's end is still followed: the renewer hears of it paused
// when the delay passes, and its owner is told of the loss a watchdog
// after the acquire.
func TestPendingHoldingWhoseUnlockFailedIsFollowedToItsEnd(t *testing.T) {
	e, h, got := renewerEngine(t)
	out := e.request(&messages.Acquire{Name: "failed", Owner: "o", RequestID: "a", Watch: true})
	require.IsType(t, &messages.Acquired{}, await.Value(t, out, 5*time.Second, "Acquired"))
	renewals := make(chan struct{}, 16)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		switch {
		case c.Renews():
			renewals <- struct{}{}
			return c.Run()
		case c.Acquires():
			return c.Run()
		}
		return redistest.Failed(errors.New("unlock refused by the test"))
	})
	require.IsType(t, &messages.ReleaseFailed{}, e.ask(t, &messages.Release{Name: "failed", Owner: "o", RequestID: "r"}))
	nothingFor(t, got, 100*time.Millisecond, "within the delay")
	e.clock.Advance(registerDelay(30 * time.Second))
	reg := (*registration)(await.Value(t, got, 5*time.Second, "the registration").(*register))
	require.True(t, reg.paused, "handed over paused: its unlock failed")
	for range 4 {
		e.clock.Advance(10 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	lost := await.Value(t, out, 5*time.Second, "LockLost")
	require.IsType(t, &messages.LockLost{}, lost)
	select {
	case <-renewals:
		t.Fatal("a holding whose unlock failed was renewed")
	default:
	}
}

// A holding whose unlock failed while its registration was pending, taken
// again before the delay passed, is renewed: the new registration takes
// the pending one's place, and the renewer hears of it once, unpaused,
// never of the paused one it replaced.
func TestHoldingRetakenWhilePendingAndPausedIsRenewed(t *testing.T) {
	e, h, got := renewerEngine(t)
	out := e.request(&messages.Acquire{Name: "again", Owner: "o", RequestID: "a", Watch: true})
	require.IsType(t, &messages.Acquired{}, await.Value(t, out, 5*time.Second, "Acquired"))
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Acquires() || c.Renews() {
			return c.Run()
		}
		return redistest.Failed(errors.New("unlock refused by the test"))
	})
	require.IsType(t, &messages.ReleaseFailed{}, e.ask(t, &messages.Release{Name: "again", Owner: "o", RequestID: "r"}))
	renewals := make(chan struct{}, 16)
	h.SetHook(func(c redistest.ScriptCall) *redis.Cmd {
		if c.Renews() {
			renewals <- struct{}{}
		}
		return c.Run()
	})
	require.IsType(t, &messages.Acquired{}, e.ask(t, &messages.Acquire{Name: "again", Owner: "o", RequestID: "b"}))
	nothingFor(t, got, 100*time.Millisecond, "the new registration waits for its delay too")
	e.clock.Advance(registerDelay(30 * time.Second))
	reg := (*registration)(await.Value(t, got, 5*time.Second, "the registration").(*register))
	require.False(t, reg.paused, "the retaken holding's registration")
	nothingFor(t, got, 100*time.Millisecond, "one registration, not the paused one it replaced")
	for range 4 {
		blockUntil(t, e, 2) // the renewer's tick and expiry
		e.clock.Advance(10 * time.Second)
		await.Value(t, renewals, 5*time.Second, "a renewal")
		time.Sleep(50 * time.Millisecond) // its answer reaches the renewer before the next tick
	}
	select {
	case m := <-out:
		t.Fatalf("%T: the retaken holding is renewed, not lost", m)
	default:
	}
}
