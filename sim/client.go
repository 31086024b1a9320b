package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/redisio"
)

// client is one simulated process: a whole warden engine (its own actor
// system, root, key actors, subscriber and renewer) with its own clock,
// Redis connection and pub/sub connection, and the workload's owners.
type client struct {
	id int
	// skew is how far the client's clock is off simulated time.
	skew        time.Duration
	pausedUntil time.Duration
	crashed     bool
	crashedAt   time.Duration
	partitioned bool

	rdb     *redis.Client
	ps      *pubSub
	scripts *redisio.Scripts
	workers *actors.Workers
	sys     *actor.ActorSystem
	root    *actor.PID
	// routes is the engine's table of live key actors: the workload sends
	// its requests straight to them, as a Client does.
	routes   *actors.Routes
	workload *actor.PID
	// user is the process's user workload, nil without one.
	user     *Process
	cancelIO context.CancelFunc
}

// start builds cl's engine on the simulation's clock, Redis and scheduler.
// Spawning only posts messages: nothing runs until the driver runs it.
func (cl *client) start(w *world, r *redisSim, o *Options) error {
	cl.rdb = r.newClient(cl)
	cl.ps = newPubSub(r, cl)
	// A token of the client's own, the same in every run of a seed.
	scripts, err := redisio.NewScriptsWithToken("publish", "sim"+strconv.Itoa(cl.id))
	if err != nil {
		return err
	}
	cl.scripts = scripts
	ioCtx, cancel := context.WithCancel(context.Background())
	cl.cancelIO = cancel
	workers := actors.NewWorkersOn(func(fn func()) { w.schedule(cl, fn) })
	cl.workers = workers
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	permitID := w.permitID
	if o.newPermitID != nil {
		permitID = o.newPermitID
	}
	cl.routes = &actors.Routes{}
	props, err := actors.RootProps(actors.Config{
		Redis:       cl.rdb,
		Scripts:     scripts,
		NewPubSub:   func(context.Context) redisio.PubSub { return cl.ps },
		Clock:       &clientClock{w: w, cl: cl},
		Watchdog:    o.Watchdog,
		IdleTimeout: o.IdleTimeout,
		Logger:      logger,
		Workers:     workers,
		Routes:      cl.routes,
		IO:          ioCtx,
		NewPermitID: permitID,
	})
	if err != nil {
		return fmt.Errorf("sim: client %d: %w", cl.id, err)
	}
	cl.sys = actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }),
		actor.WithDeadLetterThrottleInterval(10*time.Millisecond),
	)
	cl.root = cl.sys.Root.SpawnPrefix(props, "warden-")
	return nil
}

// stop stops cl's engine once the run is over (work then runs freely).
func (cl *client) stop() {
	cl.cancelIO()
	_ = cl.sys.Root.PoisonFuture(cl.root).Wait()
	if cl.workload != nil {
		_ = cl.sys.Root.PoisonFuture(cl.workload).Wait()
	}
	if cl.user != nil {
		cl.user.stop()
	}
	cl.sys.Shutdown()
	_ = cl.rdb.Close()
}
