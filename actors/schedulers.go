package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// schedulers maps an actor system to the scheduler that the engines
// started in it run their work on (RunEnginesOn).
var schedulers sync.Map // *actor.ActorSystem -> *scheduler

// scheduler is one RunEnginesOn's schedule, boxed so that its undo can
// tell it from a later one.
type scheduler struct{ schedule func(fn func()) }

// RunEnginesOn makes every engine started in sys from now on, until the
// returned function is called, run all its work (its actors' mailbox turns
// and its Redis calls) through schedule, as NewWorkersOn does; schedule
// must run fn soon, on a goroutine of its own choosing. Package wardentest
// uses it to know when an engine has nothing left to do: every piece of
// work it runs passes through schedule. The engine's Close does not wait
// for the work handed to schedule: the caller owns it.
func RunEnginesOn(sys *actor.ActorSystem, schedule func(fn func())) (undo func()) {
	s := &scheduler{schedule: schedule}
	schedulers.Store(sys, s)
	return func() { schedulers.CompareAndDelete(sys, s) }
}

// WorkersFor returns the worker pool of an engine started in sys: one on
// the scheduler given to RunEnginesOn for sys, or else a new pool
// (NewWorkers). sys may be nil.
func WorkersFor(sys *actor.ActorSystem) *Workers {
	if sys != nil {
		if s, ok := schedulers.Load(sys); ok {
			return NewWorkersOn(s.(*scheduler).schedule)
		}
	}
	return NewWorkers()
}
