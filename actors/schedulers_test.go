package actors

import (
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
)

// An engine started in an actor system given to RunEnginesOn runs its work
// through that scheduler, an engine in another system (or none) gets a
// pool of its own, and after undo the system's next engines do too.
func TestRunEnginesOnHandsTheWorkOfEnginesInASystemToItsScheduler(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	newSystem := func() *actor.ActorSystem {
		return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return discard }))
	}
	sys, other := newSystem(), newSystem()
	defer sys.Shutdown()
	defer other.Shutdown()

	ran := make(chan string, 1)
	undo := RunEnginesOn(sys, func(fn func()) {
		go func() {
			fn()
			ran <- "scheduler"
		}()
	})
	w := WorkersFor(sys)
	w.Schedule(func() {})
	assert.Equal(t, "scheduler", await.Value(t, ran, 5*time.Second, "the scheduler"))

	for _, pool := range []*Workers{WorkersFor(other), WorkersFor(nil)} {
		require.Nil(t, pool.schedule, "an engine elsewhere gets a pool")
		pool.Stop()
	}
	undo()
	pool := WorkersFor(sys)
	require.Nil(t, pool.schedule, "after undo, a new engine gets a pool")
	pool.Stop()
	undo() // a second undo is harmless
}
