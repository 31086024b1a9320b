package sim_test

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/sim"
)

// worker runs the job once: it takes the fenced lock "job" and marks the
// job done in the store with its token, unless a newer holder read it
// first.
type worker struct{ p *sim.Process }

func (w *worker) Receive(ctx actor.Context) {
	owner := fmt.Sprint("worker-", w.p.ID())
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Request(w.p.Engine(), &messages.Acquire{Name: "job", Kind: messages.KindFencedLock, Owner: owner,
			RequestID: owner, Lease: 2 * time.Second})
	case *messages.Acquired:
		if _, done, err := w.p.KV().GetFenced("job", m.Token); err == nil && !done {
			if w.p.KV().PutFenced("job", owner, m.Token) == nil {
				w.p.Record(sim.Event{Owner: owner, What: "ran", Key: "job", Token: m.Token})
			}
		}
		ctx.Request(w.p.Engine(), &messages.Release{Name: "job", Kind: messages.KindFencedLock, Owner: owner,
			RequestID: owner + "-release"})
	}
}

// A user workload: one worker per process, and the invariant that the job
// ran at most once, over five seeds with process pauses.
func ExampleWorkload() {
	o := sim.Options{Clients: 3, Length: 10 * time.Second, Faults: []sim.FaultKind{sim.FaultPause},
		Workload: &sim.Workload{
			Actors: func(p *sim.Process) []actor.Producer {
				return []actor.Producer{func() actor.Actor { return &worker{p: p} }}
			},
			Check: func(h *sim.History) []sim.Violation {
				if len(h.Events) > 1 {
					return []sim.Violation{{Check: "at most once", At: h.Events[1].At, Name: "job", What: "ran twice"}}
				}
				return nil
			},
		}}
	results, errs := sim.RunSeeds(o, 1, 5)
	for i, res := range results {
		if errs[i] != nil {
			fmt.Println(errs[i])
			continue
		}
		fmt.Printf("seed %d: ran %d time(s), %d failed check(s)\n", res.Seed, len(res.Events), len(res.Failed()))
	}
	// Output:
	// seed 1: ran 1 time(s), 0 failed check(s)
	// seed 2: ran 1 time(s), 0 failed check(s)
	// seed 3: ran 1 time(s), 0 failed check(s)
	// seed 4: ran 1 time(s), 0 failed check(s)
	// seed 5: ran 1 time(s), 0 failed check(s)
}
