package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
)

// tickSink is an actor that passes on each idleTick it receives.
func tickSink(t *testing.T, sys *actor.ActorSystem) (*actor.PID, <-chan uint64) {
	t.Helper()
	ticks := make(chan uint64, 16)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*idleTick); ok {
			ticks <- m.Gen
		}
	}))
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	return pid, ticks
}

func noTick(t *testing.T, ticks <-chan uint64, what string) {
	t.Helper()
	select {
	case g := <-ticks:
		t.Fatalf("%s: tick %d came", what, g)
	case <-time.After(50 * time.Millisecond):
	}
}

// advance moves clock on by d once the idleTimers' clock timer is armed.
func advance(t *testing.T, clock *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, clock.BlockUntilContext(ctx, 1), "the clock timer is armed")
	clock.Advance(d)
}

// newIdleTimersForTest makes idleTimers on a fake clock in an actor
// system of their own, both stopped at the test's end.
func newIdleTimersForTest(t *testing.T) (*actor.ActorSystem, *clockwork.FakeClock, *idleTimers) {
	t.Helper()
	sys := actor.NewActorSystem()
	clock := clockwork.NewFakeClock()
	ts := newIdleTimers(clock, sys)
	t.Cleanup(sys.Shutdown)
	t.Cleanup(ts.stop)
	return sys, clock, ts
}

func TestIdleTimersSendEachTickWhenDueInOrder(t *testing.T) {
	sys, clock, ts := newIdleTimersForTest(t)
	pidA, ticksA := tickSink(t, sys)
	pidB, ticksB := tickSink(t, sys)
	var a, b idleTimer
	a.arm(ts, pidA, 3*time.Second)
	b.arm(ts, pidB, time.Second) // earlier than the clock timer armed: it is re-armed for this one

	advance(t, clock, time.Second)
	assert.Equal(t, b.gen.Load(), await.Value(t, ticksB, 5*time.Second, "b's tick"))
	noTick(t, ticksA, "a at 1s")
	advance(t, clock, 2*time.Second)
	assert.Equal(t, a.gen.Load(), await.Value(t, ticksA, 5*time.Second, "a's tick"))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	assert.Empty(t, ts.due)
	assert.Nil(t, ts.t, "nothing due: no clock timer left armed")
}

func TestIdleTimersDropTheTickOfAStoppedTimer(t *testing.T) {
	sys, clock, ts := newIdleTimersForTest(t)
	pidA, ticksA := tickSink(t, sys)
	pidB, ticksB := tickSink(t, sys)
	var a, b idleTimer
	a.arm(ts, pidA, time.Second)
	b.arm(ts, pidB, time.Second)
	a.stop()
	advance(t, clock, time.Second)
	assert.Equal(t, b.gen.Load(), await.Value(t, ticksB, 5*time.Second, "b's tick"))
	noTick(t, ticksA, "a stopped")

	// Re-armed: the earlier entry's generation is stale, the new one's due.
	a.arm(ts, pidA, 2*time.Second)
	advance(t, clock, time.Second)
	assert.Equal(t, a.gen.Load(), await.Value(t, ticksA, 5*time.Second, "a's tick after its re-arm"))
}

func TestIdleTimersStopDropsEverythingDue(t *testing.T) {
	sys, clock, ts := newIdleTimersForTest(t)
	pid, ticks := tickSink(t, sys)
	var a idleTimer
	a.arm(ts, pid, time.Second)
	ts.stop()
	ts.add(&a, a.gen.Load(), pid, time.Second) // after stop: refused
	clock.Advance(time.Minute)
	noTick(t, ticks, "stopped")
	ts.mu.Lock()
	defer ts.mu.Unlock()
	assert.Empty(t, ts.due)
	assert.Nil(t, ts.t)
}

func TestIdleTimersGiveBackABurstsRoom(t *testing.T) {
	sys, clock, ts := newIdleTimersForTest(t)
	pid, _ := tickSink(t, sys)
	timers := make([]idleTimer, 200)
	for i := range timers {
		timers[i].arm(ts, pid, time.Second)
		timers[i].stop() // their ticks are dropped, not sent
	}
	advance(t, clock, time.Second)
	require.Eventually(t, func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.due == nil
	}, 5*time.Second, time.Millisecond, "the heap's room goes back once nothing is due")
}
