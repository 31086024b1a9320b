package actors

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
)

func TestRouteEntryClosesOnlyAtTheCountItsActorSaw(t *testing.T) {
	e := &keyEntry{routed: 2}
	require.True(t, e.take())
	require.True(t, e.take())
	assert.False(t, e.closeAt(3), "one request sent straight has not reached the actor")
	require.True(t, e.closeAt(4), "every request sent reached it")
	assert.False(t, e.take(), "closed: a sender goes to root")
	assert.False(t, e.closeAt(4), "closed once")

	f := &keyEntry{routed: 1}
	require.True(t, f.take())
	assert.Equal(t, uint64(2), f.close(), "what was sent, so that root waits for it")
	assert.False(t, f.take())
}

// routedEngine is startEngine with a Routes the test sends through, as a
// Client does.
func routedEngine(t *testing.T, tune ...func(*Config)) (*engine, *Routes) {
	t.Helper()
	routes := &Routes{}
	e := startEngine(t, redistest.Start(t).Client(t), append(tune, func(c *Config) { c.Routes = routes })...)
	return e, routes
}

// send sends msg through routes and waits up to 5 s for its reply: a
// request lost to a stopped actor fails the test in seconds.
func (e *engine) send(t *testing.T, routes *Routes, msg any) any {
	t.Helper()
	f := actor.NewFuture(e.sys, 5*time.Second)
	routes.Request(e.sys.Root, e.root, msg, f.PID())
	r, err := f.Result()
	require.NoError(t, err, "the answer to %T %+v", msg, msg)
	return r
}

// A request sent straight to a key actor while it asks root to stop it is
// never lost: root refuses the passivation when a request was sent after
// the actor counted what it had, and a sender that comes after the stop
// goes to root, which spawns a new actor. Four goroutines lock and unlock
// two names through the routes while the fake clock is moved past the
// idle timeout again and again, so idle ticks race the requests.
func TestRequestsSentStraightSurvivePassivation(t *testing.T) {
	e, routes := routedEngine(t)
	var done atomic.Bool
	var wg, ticking sync.WaitGroup
	ticking.Go(func() {
		for !done.Load() {
			e.clock.Advance(2 * time.Minute)
			time.Sleep(200 * time.Microsecond)
		}
	})
	defer ticking.Wait()
	defer done.Store(true)
	var straight atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := range 150 {
				name := fmt.Sprintf("route:%d", i%2)
				owner := fmt.Sprintf("o%d", g)
				acq := &messages.Acquire{Name: name, Owner: owner, RequestID: fmt.Sprintf("%s-a%d", owner, i),
					Lease: time.Hour, Deadline: e.clock.Now()}
				if k, ok := keyOf(acq); ok && routes.load(k) != nil {
					straight.Add(1)
				}
				switch r := e.send(t, routes, acq).(type) {
				case *messages.Acquired:
					rel := e.send(t, routes, &messages.Release{Name: name, Owner: owner, RequestID: fmt.Sprintf("%s-r%d", owner, i)})
					require.IsType(t, &messages.Released{}, rel)
				case *messages.AcquireFailed:
					require.ErrorIs(t, r.Err, messages.ErrTimeout, "refused: another owner holds it")
				default:
					t.Fatalf("unexpected %T", r)
				}
			}
		})
	}
	require.Eventually(t, func() bool {
		stopped, _ := routes.Passivations()
		return stopped > 0
	}, 10*time.Second, time.Millisecond, "idle key actors passivated meanwhile")
	wg.Wait()
	stopped, refused := routes.Passivations()
	t.Logf("%d requests found a live key actor to go straight to; %d passivations, %d refused", straight.Load(), stopped, refused)
	assert.Positive(t, straight.Load(), "requests went straight to key actors")
	assert.Zero(t, e.rdb.Exists(t.Context(), "route:0", "route:1").Val(), "every lock taken was released")
}

// A key actor that fails while requests are sent straight to it answers
// every one of them (its fault), and root stops it only once they all
// reached it; later requests go to a new key actor.
func TestRequestsSentStraightToAFailedKeyActorAreAnswered(t *testing.T) {
	e, routes := routedEngine(t)
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "R", Owner: "h", RequestID: "h0", Lease: time.Hour}))
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "R", Owner: "h", RequestID: "h0r"}))
	var wg sync.WaitGroup
	var faults, served atomic.Int64
	start := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			<-start
			for i := range 100 {
				owner := fmt.Sprintf("o%d", g)
				r := e.send(t, routes, &messages.Acquire{Name: "R", Owner: owner, RequestID: fmt.Sprintf("%s-%d", owner, i),
					Lease: time.Hour, Deadline: e.clock.Now()})
				switch r := r.(type) {
				case *messages.Acquired:
					served.Add(1)
					e.send(t, routes, &messages.Release{Name: "R", Owner: owner, RequestID: fmt.Sprintf("%s-%dr", owner, i)})
				case *messages.AcquireFailed:
					if !errors.Is(r.Err, messages.ErrTimeout) {
						assert.ErrorContains(t, r.Err, "internal error", "refused, or the failed actor's fault")
						faults.Add(1)
					}
				}
			}
		})
	}
	close(start)
	e.sys.Root.Send(e.root, &crash{Key: key{Name: "R", Kind: messages.KindLock}})
	wg.Wait()
	t.Logf("%d acquired, %d answered with the fault", served.Load(), faults.Load())
	require.Eventually(t, func() bool { return e.keyActors(t) <= 1 }, 5*time.Second, 5*time.Millisecond,
		"the failed key actor is gone")
	assert.Empty(t, e.ask(t, &KeyActorsOf{Name: "nobody"}))
}

// A request that does not validate, for a name whose key actor is live,
// goes to root, which answers the error: it never reaches the key actor,
// which takes what it gets as valid, and the holding stays as it was.
func TestInvalidRequestForALiveNameIsRefusedByRoot(t *testing.T) {
	e, routes := routedEngine(t)
	require.IsType(t, &messages.Acquired{}, e.send(t, routes, &messages.Acquire{Name: "V", Owner: "h", RequestID: "h0", Lease: time.Hour}))
	k := key{Name: "V"}
	require.NotNil(t, routes.load(k), "the key actor is live")
	bad := e.send(t, routes, &messages.Acquire{Name: "V", Owner: "h", RequestID: "h1", Lease: -time.Second})
	require.IsType(t, &messages.AcquireFailed{}, bad)
	assert.ErrorIs(t, bad.(*messages.AcquireFailed).Err, messages.ErrInvalidArgument)
	rel := e.send(t, routes, &messages.Release{Name: "V", Owner: "h", RequestID: ""})
	require.IsType(t, &messages.ReleaseFailed{}, rel)
	assert.ErrorIs(t, rel.(*messages.ReleaseFailed).Err, messages.ErrInvalidArgument)
	require.IsType(t, &messages.Released{}, e.send(t, routes, &messages.Release{Name: "V", Owner: "h", RequestID: "h0r"}),
		"the holding was left as it was")
}
