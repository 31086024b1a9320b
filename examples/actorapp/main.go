// Command actorapp shows warden's actor protocol: actors take and release a
// lock by sending messages to the engine (Client.PID) and get the replies
// as messages, so an actor waiting for a lock keeps serving its mailbox.
//
// Actor B takes the lock and holds it for 300ms. Actor A then asks for it
// and answers pings while its Acquire is pending; it gets the lock when B
// releases it.
//
//	go run ./examples/actorapp
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
	"github.com/warden-go/warden/messages"
)

const lockName = "actorapp:orders"

func main() {
	if err := run(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rdb, where, stopRedis, err := exampleredis.Connect(ctx)
	if err != nil {
		return err
	}
	defer stopRedis()
	fmt.Println("redis:", where)

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer func() {
		if !sys.IsStopped() {
			sys.Shutdown()
		}
	}()
	c, err := client.New(rdb, client.WithActorSystem(sys))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close(context.Background()) }() // ErrClosed after the Close below

	// B takes the lock first and holds it for a second, long enough for A to
	// answer its pings while it waits, even on a loaded machine.
	bHolds := make(chan struct{})
	bDone := make(chan error, 1)
	b := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &lockUser{label: "B", engine: c.PID(), owner: c.ID() + ":actor-2",
			work: time.Second, acquired: bHolds, done: bDone}
	}))
	select {
	case <-bHolds:
	case err := <-bDone:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}

	// A asks for the lock while B holds it.
	aDone := make(chan error, 1)
	a := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &lockUser{label: "A", engine: c.PID(), owner: c.ID() + ":actor-1",
			work: 100 * time.Millisecond, done: aDone}
	}))

	// A's mailbox stays open while it waits: it answers these at once.
	for i := 1; i <= 3; i++ {
		time.Sleep(50 * time.Millisecond)
		reply, err := sys.Root.RequestFuture(a, &ping{n: i}, time.Second).Result()
		if err != nil {
			return fmt.Errorf("ping %d: %w", i, err)
		}
		if p, ok := reply.(*pong); !ok || !p.waiting {
			return fmt.Errorf("ping %d: want a pong from a waiting actor, got %#v", i, reply)
		}
	}

	for _, done := range []chan error{bDone, aDone} {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	for _, pid := range []*actor.PID{a, b} {
		if err := sys.Root.PoisonFuture(pid).Wait(); err != nil {
			return err
		}
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	sys.Shutdown()
	fmt.Println("done")
	return nil
}

// ping asks an actor to show it is responsive; it answers with a pong.
type ping struct{ n int }

// pong answers ping; waiting tells whether the actor's Acquire was pending.
type pong struct {
	n       int
	waiting bool
}

// workDone tells a lockUser that its critical section is over.
type workDone struct{}

// lockUser asks the engine for the lock when it starts, holds it for work,
// then releases it and reports to done (nil, or what went wrong).
type lockUser struct {
	label    string
	engine   *actor.PID
	owner    string
	work     time.Duration
	acquired chan<- struct{} // closed when the lock is obtained; may be nil
	done     chan<- error

	asked    time.Time // when the pending Acquire was sent; zero when none is
	requests int
	stopWork scheduler.CancelFunc
}

var _ actor.Actor = (*lockUser)(nil)

func (u *lockUser) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		u.asked = time.Now()
		fmt.Printf("%s: asks for %s\n", u.label, lockName)
		ctx.Request(u.engine, &messages.Acquire{
			Name: lockName, Kind: messages.KindLock, Owner: u.owner,
			RequestID: u.nextRequestID(),
			Lease:     0,                               // watchdog mode: renewed while held
			Deadline:  time.Now().Add(2 * time.Second), // give up after 2s
			Watch:     true,                            // send us LockLost if the lock is lost
		})

	case *ping:
		waiting := !u.asked.IsZero()
		if waiting {
			fmt.Printf("%s: answers ping %d while its Acquire is pending (%v)\n",
				u.label, m.n, time.Since(u.asked).Round(10*time.Millisecond))
		}
		ctx.Respond(&pong{n: m.n, waiting: waiting})

	case *messages.Acquired:
		waited := "at once"
		if d := time.Since(u.asked); d >= 10*time.Millisecond {
			waited = "after " + d.Round(10*time.Millisecond).String()
		}
		u.asked = time.Time{}
		fmt.Printf("%s: acquired %s %s (hold count %d), works %v\n",
			u.label, m.Name, waited, m.HoldCount, u.work)
		if u.acquired != nil {
			close(u.acquired)
		}
		timers := scheduler.NewTimerScheduler(ctx.ActorSystem().Root)
		u.stopWork = timers.SendOnce(u.work, ctx.Self(), &workDone{})

	case *workDone:
		fmt.Printf("%s: releases %s\n", u.label, lockName)
		ctx.Request(u.engine, &messages.Release{
			Name: lockName, Kind: messages.KindLock, Owner: u.owner, RequestID: u.nextRequestID(),
		})

	case *messages.Released:
		fmt.Printf("%s: released %s (hold count now %d)\n", u.label, m.Name, m.Remaining)
		u.done <- nil

	case *messages.AcquireFailed:
		u.asked = time.Time{}
		u.done <- fmt.Errorf("%s: acquire %s: %w", u.label, m.Name, m.Err)

	case *messages.ReleaseFailed:
		u.done <- fmt.Errorf("%s: release %s: %w", u.label, m.Name, m.Err)

	case *messages.LockLost:
		// The lock expired or was taken over while held: stop the work.
		if u.stopWork != nil {
			u.stopWork()
		}
		u.done <- fmt.Errorf("%s: %w", u.label, m.Err) // m.Err wraps ErrLockLost

	case *actor.Stopping:
		if u.stopWork != nil {
			u.stopWork()
		}
	}
}

// nextRequestID returns a new request ID, unique among the owner's
// requests.
func (u *lockUser) nextRequestID() string {
	u.requests++
	return fmt.Sprintf("%s:%d", u.owner, u.requests)
}
