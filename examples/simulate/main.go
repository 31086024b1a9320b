// Command simulate runs a job runner in warden's deterministic simulation
// (package sim) and shows why its lock needs a fencing token.
//
// Each of three processes runs one runner actor. A runner takes the job at
// the head of the queue (the first job not marked done in Redis), locks it
// with a fixed lease of 2s, reads it again under the lock, does it (which
// takes up to a second) and marks it done. Every job must run at most
// once.
//
// The naive runner takes a plain Lock and trusts it: when its process
// pauses (a GC pause, a SIGSTOP) for longer than the lease while it works,
// another runner takes the expired lock, finds the job not done and runs
// it too. The fenced runner takes a FencedLock and reads and writes the
// job through package fence's Redis guard with its token, the code a real
// program runs: the guard's script, run by the simulated Redis, refuses
// the stale runner's write once a newer holder has read the job.
//
//	go run ./examples/simulate                    # both runners, seeds 1..200, pauses
//	go run ./examples/simulate -runner naive -seed 1 -runs 500 -timeline caught.html
//
// It prints the seeds at which a runner broke "at most once" and writes
// the timeline of the first of them. It exits 1 when the fenced runner
// broke it, or the naive one never did.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/fence"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/sim"
)

const (
	// jobs is how many jobs the queue holds.
	jobs = 40
	// lease is the runners' fixed lease, longer than any job takes.
	lease = 2 * time.Second
	// checkOnce names the invariant in the violations.
	checkOnce = "at most once"
)

// Workload returns the job runners' workload: the naive runner, or the
// fenced one.
func Workload(fenced bool) *sim.Workload {
	return &sim.Workload{
		Actors: func(p *sim.Process) []actor.Producer {
			return []actor.Producer{func() actor.Actor {
				return &runner{p: p, fenced: fenced, owner: fmt.Sprintf("runner-%d", p.ID()),
					guard: fence.NewRedis(p.Redis())}
			}}
		},
		Check: ranOnce,
	}
}

// Options are the simulation options the command and its tests run: three
// processes, 20s each, with process pauses.
func Options(fenced bool) sim.Options {
	return sim.Options{Clients: 3, Length: 20 * time.Second, Faults: []sim.FaultKind{sim.FaultPause},
		Workload: Workload(fenced)}
}

// ranOnce is the invariant: no job ran twice.
func ranOnce(h *sim.History) []sim.Violation {
	first := map[string]sim.Event{}
	var vs []sim.Violation
	for _, e := range h.Events {
		if e.What != "ran" {
			continue
		}
		if f, ok := first[e.Key]; ok {
			vs = append(vs, sim.Violation{Check: checkOnce, At: e.At, Name: e.Key,
				What: fmt.Sprintf("%s ran it at %v, %s again at %v", f.Owner, f.At, e.Owner, e.At)})
			continue
		}
		first[e.Key] = e
	}
	return vs
}

// The runner's own messages: look for the next job, the job is done.
type (
	next     struct{}
	workDone struct{}
)

// runner is one process's job runner.
type runner struct {
	p      *sim.Process
	fenced bool
	owner  string
	self   *actor.PID
	// guard is the fenced runner's way to the job's key.
	guard *fence.Redis
	job   string // the job it locks or works on
	token int64
	reqs  int
}

// readFenced is the fenced runner's read of a job under its lock: run
// through the guard, it raises the job's fence to the token, so that an
// older holder's later write is refused.
const readFenced = `return redis.call('GET', KEYS[1])`

// callCtx bounds one call to the simulated Redis.
func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Second)
}

func (r *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.self = ctx.Self()
		r.later(time.Duration(r.p.Rand().Int64N(int64(100 * time.Millisecond))))
	case *next:
		r.lockHead(ctx)
	case *messages.Acquired:
		r.token = m.Token
		r.start(ctx)
	case *messages.AcquireFailed:
		r.later(50 * time.Millisecond)
	case *workDone:
		r.finish(ctx)
	case *messages.Released, *messages.ReleaseFailed:
		r.later(time.Duration(r.p.Rand().Int64N(int64(50 * time.Millisecond))))
	}
}

// later looks for the next job after d.
func (r *runner) later(d time.Duration) { r.p.SendAfter(d, r.self, &next{}) }

// lockHead asks for the lock of the first job not done.
func (r *runner) lockHead(ctx actor.Context) {
	r.job = ""
	keys := make([]string, jobs)
	for i := range keys {
		keys[i] = doneKey(jobKey(i))
	}
	cctx, cancel := callCtx()
	done, err := r.p.Redis().MGet(cctx, keys...).Result()
	cancel()
	if err != nil {
		r.later(50 * time.Millisecond)
		return
	}
	for i, v := range done {
		if v == nil {
			r.job = jobKey(i)
			break
		}
	}
	if r.job == "" {
		return // the queue is empty
	}
	kind := messages.KindLock
	if r.fenced {
		kind = messages.KindFencedLock
	}
	r.reqs++
	ctx.Request(r.p.Engine(), &messages.Acquire{Name: r.job, Kind: kind, Owner: r.owner,
		RequestID: fmt.Sprintf("%s-%d", r.owner, r.reqs), Lease: lease, Deadline: r.p.Now().Add(5 * time.Second)})
}

// start reads the job again under the lock and, if it is not done, does
// it: the work takes 200ms..1s.
func (r *runner) start(ctx actor.Context) {
	cctx, cancel := callCtx()
	defer cancel()
	var err error
	if r.fenced {
		_, err = r.guard.Eval(cctx, r.token, readFenced, []string{doneKey(r.job)})
	} else {
		err = r.p.Redis().Get(cctx, doneKey(r.job)).Err()
	}
	if !errors.Is(err, redis.Nil) { // done already, refused, or failed
		if errors.Is(err, fence.ErrStaleToken) {
			r.p.Record(sim.Event{Owner: r.owner, What: "refused", Key: r.job, Token: r.token})
		}
		r.release(ctx)
		return
	}
	work := 200*time.Millisecond + time.Duration(r.p.Rand().Int64N(int64(800*time.Millisecond)))
	r.p.SendAfter(work, r.self, &workDone{})
}

// finish marks the job done (with the token, for the fenced runner) and
// records that it ran, unless the store refused the stale token.
func (r *runner) finish(ctx actor.Context) {
	value := "done by " + r.owner
	cctx, cancel := callCtx()
	defer cancel()
	var err error
	if r.fenced {
		err = r.guard.Set(cctx, r.token, doneKey(r.job), value, 0)
	} else {
		err = r.p.Redis().Set(cctx, doneKey(r.job), value, 0).Err()
	}
	if err != nil {
		what := "write failed"
		if errors.Is(err, fence.ErrStaleToken) {
			what = "refused"
		}
		r.p.Record(sim.Event{Owner: r.owner, What: what, Key: r.job, Token: r.token})
		r.release(ctx)
		return
	}
	r.p.Log().Append(r.job + " " + value)
	r.p.Record(sim.Event{Owner: r.owner, What: "ran", Key: r.job, Token: r.token})
	r.release(ctx)
}

func (r *runner) release(ctx actor.Context) {
	kind := messages.KindLock
	if r.fenced {
		kind = messages.KindFencedLock
	}
	r.reqs++
	ctx.Request(r.p.Engine(), &messages.Release{Name: r.job, Kind: kind, Owner: r.owner,
		RequestID: fmt.Sprintf("%s-%d", r.owner, r.reqs)})
}

// jobKey is job i's name, its lock's.
func jobKey(i int) string { return fmt.Sprintf("job-%02d", i) }

// doneKey is the Redis key that marks job done: "{job-07}:done", in the
// job's slot (the lock's key is the job's name).
func doneKey(job string) string { return "{" + job + "}:done" }

// caught runs seeds first..first+n-1 with o and returns the seeds whose
// run broke an invariant (no injected fault excuses the user's), the
// first failing result, and how many reads and writes the fence refused.
func caught(o sim.Options, first int64, n int) ([]int64, *sim.Result, int, error) {
	results, errs := sim.RunSeeds(o, first, n)
	var seeds []int64
	var firstFailed *sim.Result
	refused := 0
	for i, res := range results {
		if errs[i] != nil {
			return nil, nil, 0, errs[i]
		}
		for _, e := range res.Events {
			if e.What == "refused" {
				refused++
			}
		}
		if len(res.Failed()) > 0 {
			seeds = append(seeds, res.Seed)
			if firstFailed == nil {
				firstFailed = res
			}
		}
	}
	return seeds, firstFailed, refused, nil
}

func main() {
	which := flag.String("runner", "both", `"naive", "fenced" or "both"`)
	seed := flag.Int64("seed", 1, "first seed")
	runs := flag.Int("runs", 200, "how many seeds")
	timeline := flag.String("timeline", filepath.Join(os.TempDir(), "warden-simulate.html"),
		"where to write the first failing seed's timeline")
	flag.Parse()
	switch {
	case *which != "both" && *which != "naive" && *which != "fenced":
		fmt.Fprintf(os.Stderr, "-runner %q: want naive, fenced or both\n", *which)
		os.Exit(2)
	case *runs < 1:
		fmt.Fprintln(os.Stderr, "-runs must be at least 1")
		os.Exit(2)
	}
	code := 0
	for _, fenced := range []bool{false, true} {
		name := map[bool]string{false: "naive", true: "fenced"}[fenced]
		if *which != "both" && *which != name {
			continue
		}
		start := time.Now()
		seeds, res, refused, err := caught(Options(fenced), *seed, *runs)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("%s runner: %d seeds (%d..%d) in %v, caught at %d: %v\n", name, *runs, *seed, *seed+int64(*runs)-1,
			time.Since(start).Round(time.Millisecond), len(seeds), seeds)
		if fenced {
			fmt.Printf("  the fence refused %d stale reads and writes\n", refused)
		}
		if res != nil {
			fmt.Printf("  seed %d: %v\n", res.Seed, res.Failed()[0])
			if err := res.WriteTimelineFile(*timeline); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Printf("  timeline of seed %d written to %s\n", res.Seed, *timeline)
		}
		if fenced == (len(seeds) > 0) {
			code = 1
		}
	}
	os.Exit(code)
}
