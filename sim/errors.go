package sim

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrStaleToken is a fenced operation on the simulated KV store whose
	// fencing token is below the highest one the key has seen.
	ErrStaleToken = errors.New("sim: stale fencing token")
	// ErrBlocked ends a run whose user actor held a scheduler step longer
	// than Workload.StepTimeout of wall time: it slept on the wall clock,
	// or waited on a channel (or a future) outside the simulation. A run
	// without a user workload ends with it when an engine step takes
	// longer than 10 s (process -1, "(an engine step)"): an engine bug.
	ErrBlocked = errors.New("sim: a step blocked the scheduler")
	// ErrPanicked ends a run whose user actor, timer callback or invariant
	// panicked.
	ErrPanicked = errors.New("sim: a user workload panicked")
)

// StepError is why a run ended early: a user actor (or an engine step) that
// blocked a step (ErrBlocked) or panicked (ErrPanicked). It names the seed,
// the step, the simulated time, the process and the actor, the message it
// was handling and, for a panic, the value and the stack.
type StepError struct {
	Seed int64
	// Step is the driver's step count when it happened; At the simulated
	// time.
	Step int
	At   time.Duration
	// Process is the simulated process (-1 for an invariant); Actor the
	// actor's PID Id ("" for a timer callback or an invariant); Message
	// the type of the message it was handling.
	Process int
	Actor   string
	Message string
	// Panic is the panic's value and Stack its goroutine's stack; nil and
	// "" for a blocked step.
	Panic any
	Stack string
	kind  error
}

func (e *StepError) Error() string {
	where := fmt.Sprintf("seed %d, step %d at %v, process %d, actor %q handling %s", e.Seed, e.Step, e.At,
		e.Process, e.Actor, e.Message)
	if e.kind == ErrBlocked {
		return fmt.Sprintf("%v (%s): it slept on the wall clock or waited on a channel outside the simulation",
			e.kind, where)
	}
	return fmt.Sprintf("%v (%s): %v\n%s", e.kind, where, e.Panic, e.Stack)
}

// Unwrap returns ErrBlocked or ErrPanicked.
func (e *StepError) Unwrap() error { return e.kind }
