package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/extensions"
)

// schedulerExtension is the ID under which RunEnginesOn registers its
// scheduler in an actor system's extensions: the scheduler travels with
// the system it was given for, and the package keeps no table of its own.
var schedulerExtension = extensions.NextExtensionID()

// scheduler is one RunEnginesOn's schedule, as an actor system extension;
// a nil schedule (after undo) stands for none.
type scheduler struct{ schedule func(fn func()) }

func (*scheduler) ExtensionID() extensions.ExtensionID { return schedulerExtension }

// RunEnginesOn makes every engine started in sys from now on, until the
// returned function is called (which puts back the scheduler before it),
// run all its work (its actors' mailbox turns and its Redis calls) through
// schedule, as NewWorkersOn does; schedule must run fn soon, on a
// goroutine of its own choosing. Package wardentest
// uses it to know when an engine has nothing left to do: every piece of
// work it runs passes through schedule. The engine's Close does not wait
// for the work handed to schedule: the caller owns it. RunEnginesOn and
// undo must not run while an engine is being started in sys (protoactor's
// extensions are not synchronized): call them before the first client is
// made and after the last is closed.
func RunEnginesOn(sys *actor.ActorSystem, schedule func(fn func())) (undo func()) {
	prev, _ := sys.Extensions.Get(schedulerExtension).(*scheduler)
	if prev == nil {
		prev = &scheduler{}
	}
	s := &scheduler{schedule: schedule}
	sys.Extensions.Register(s)
	return func() {
		if cur, ok := sys.Extensions.Get(schedulerExtension).(*scheduler); ok && cur == s {
			sys.Extensions.Register(prev) // the scheduler before, if any
		}
	}
}

// WorkersFor returns the worker pool of an engine started in sys: one on
// the scheduler given to RunEnginesOn for sys, or else a new pool
// (NewWorkers). sys may be nil.
func WorkersFor(sys *actor.ActorSystem) *Workers {
	if sys != nil {
		if s, ok := sys.Extensions.Get(schedulerExtension).(*scheduler); ok && s.schedule != nil {
			return NewWorkersOn(s.schedule)
		}
	}
	return NewWorkers()
}
