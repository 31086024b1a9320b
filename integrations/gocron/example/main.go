// Command example runs one gocron job on three schedulers, each with its
// own warden Client as if on three machines, two ways:
//
//  1. with wardengocron's Locker: every scheduler fires the job every
//     second, and each tick runs on exactly one of them;
//  2. with wardengocron's Elector: only the leader of a warden election
//     runs the job, and when the leader stops, another takes over.
//
// From the repository's root:
//
//	go -C integrations/gocron run ./example
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	wardengocron "github.com/warden-go/warden/integrations/gocron"
	"github.com/warden-go/warden/internal/exampleredis"
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(30*time.Second, demo) }

var names = []string{"A", "B", "C"}

// ledger records which scheduler ran each tick.
type ledger struct {
	mu    sync.Mutex
	start time.Time
	ticks map[int][]string
}

func newLedger(start time.Time) *ledger { return &ledger{start: start, ticks: map[int][]string{}} }

func (l *ledger) ran(scheduler string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tick := int(time.Since(l.start).Round(time.Second)/time.Second) + 1
	l.ticks[tick] = append(l.ticks[tick], scheduler)
	fmt.Printf("  tick %d: ran on scheduler %s\n", tick, scheduler)
}

// check returns an error unless ticks first..last each ran exactly once,
// on one of the schedulers in on.
func (l *ledger) check(first, last int, on ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for tick := first; tick <= last; tick++ {
		ran := l.ticks[tick]
		if len(ran) != 1 || !slices.Contains(on, ran[0]) {
			return fmt.Errorf("tick %d ran on %v, want once on one of %v", tick, ran, on)
		}
	}
	return nil
}

// instance is one scheduler with its own warden Client.
type instance struct {
	name  string
	c     *client.Client
	sched gocron.Scheduler
}

// start starts, in its own goroutine, a scheduler with opts and the job
// "report" every second from start on.
func startInstance(name string, c *client.Client, start time.Time, l *ledger, opts ...gocron.SchedulerOption) (*instance, error) {
	in := &instance{name: name, c: c}
	started := make(chan error, 1)
	go func() {
		s, err := gocron.NewScheduler(opts...)
		if err == nil {
			_, err = s.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() { l.ran(name) }),
				gocron.WithName("report"), gocron.WithStartAt(gocron.WithStartDateTime(start)))
			if err != nil {
				_ = s.Shutdown()
			}
		}
		if err == nil {
			s.Start()
			in.sched = s
		}
		started <- err
	}()
	return in, <-started
}

func demo(ctx context.Context, c *client.Client, rdb redis.UniversalClient) error {
	// Three "machines": the example's Client and two more on the same Redis.
	clients := []*client.Client{c}
	for range 2 {
		cc, err := client.New(rdb)
		if err != nil {
			return err
		}
		defer func() { _ = cc.Close(context.Background()) }()
		clients = append(clients, cc)
	}
	// What the election leaves behind: its lock's fencing token counter
	// (a real deployment keeps it, so terms' tokens keep increasing) and
	// the leader's record.
	defer rdb.Del(context.Background(), "redisson_lock_token:{report-scheduler}", "warden_election:{report-scheduler}")
	if err := withLocker(clients); err != nil {
		return err
	}
	return withElector(ctx, clients)
}

func withLocker(clients []*client.Client) error {
	fmt.Println("with the Locker: every scheduler fires, each tick runs once")
	start := time.Now().Truncate(time.Second).Add(time.Second)
	l := newLedger(start)
	var all []*instance
	defer func() {
		for _, in := range all {
			_ = in.sched.Shutdown()
		}
	}()
	for i, c := range clients {
		locker, err := wardengocron.NewLocker(c)
		if err != nil {
			return err
		}
		in, err := startInstance(names[i], c, start, l, gocron.WithDistributedLocker(locker))
		if err != nil {
			return err
		}
		all = append(all, in)
	}
	time.Sleep(time.Until(start.Add(2*time.Second + 500*time.Millisecond)))
	return l.check(1, 3, names...)
}

func withElector(ctx context.Context, clients []*client.Client) error {
	fmt.Println("with the Elector: only the leader runs the job")
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	l := newLedger(start)
	electors := map[string]*wardengocron.Elector{}
	var all []*instance
	defer func() {
		for _, in := range all {
			if in.sched != nil {
				_ = in.sched.Shutdown()
			}
		}
		// Those that do not lead first: closing the leader first would free
		// the lock while the others still campaign, and one of them could
		// take it as it closes, to be left to its lease when its Client
		// closes. Ones whose scheduler did not start are closed too.
		for _, leading := range []bool{false, true} {
			for _, el := range electors {
				if (el.IsLeader(context.Background()) == nil) == leading {
					_ = el.Close(context.Background())
				}
			}
		}
	}()
	for i, c := range clients {
		e, err := election.New(c, "report-scheduler")
		if err != nil {
			return err
		}
		el, err := wardengocron.NewElector(e, names[i])
		if err != nil {
			return err
		}
		electors[names[i]] = el
		in, err := startInstance(names[i], c, start, l, gocron.WithDistributedElector(el))
		if err != nil {
			return err
		}
		all = append(all, in)
	}
	time.Sleep(time.Until(start.Add(time.Second + 500*time.Millisecond)))
	e, err := election.New(clients[0], "report-scheduler")
	if err != nil {
		return err
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	if err := l.check(1, 2, leader.Value); err != nil {
		return err
	}
	fmt.Printf("  scheduler %s leads (term %d); stopping it\n", leader.Value, leader.Token)
	for _, in := range all {
		if in.name == leader.Value {
			if err := in.sched.Shutdown(); err != nil {
				return err
			}
			in.sched = nil
			if err := electors[in.name].Close(ctx); err != nil {
				return err
			}
		}
	}
	time.Sleep(time.Until(start.Add(3*time.Second + 500*time.Millisecond)))
	next, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  scheduler %s took over (term %d)\n", next.Value, next.Token)
	return l.check(3, 4, next.Value)
}
