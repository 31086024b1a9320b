// Package wardengocron runs github.com/go-co-op/gocron/v2 jobs on a fleet
// with warden: a Locker (gocron.WithDistributedLocker) so that each run of
// a job happens on one scheduler only, and an Elector
// (gocron.WithDistributedElector) so that only the leader of a warden
// election runs jobs.
//
// It is a module of its own, so that warden's core module does not depend
// on gocron.
//
//	locker, err := wardengocron.NewLocker(c)
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//
//	e, err := election.New(c, "scheduler")
//	elector, err := wardengocron.NewElector(e, "host-a")
//	defer elector.Close(ctx)
//	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
package wardengocron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/messages"
)

var (
	// ErrJobLocked: Lock found the job running, or run for this tick, on
	// another scheduler.
	ErrJobLocked = errors.New("warden: gocron: job locked by another scheduler")
	// ErrInvalidArgument is client.ErrInvalidArgument: a bad job name or
	// option; the message names the field.
	ErrInvalidArgument = client.ErrInvalidArgument
)

// runPrefix names a job's tick marker: gocron_run:{job}.
const runPrefix = "gocron_run:{"

var (
	_ gocron.Locker = (*Locker)(nil)
	_ gocron.Lock   = (*jobLock)(nil)
)

// Locker is a gocron.Locker on warden. Lock takes two warden locks named
// after the job: the job's lock itself (the job's name, held in watchdog
// mode while the run lasts, so that runs never overlap however long they
// take), and a tick marker (gocron_run:{job}, held for the minimum hold and
// never released early), so that the other schedulers, whose timers fire
// at nearly the same moment, find the tick taken even when the run ended
// before they asked. Give every scheduler of the fleet its own Locker (or
// share one: each Lock takes fresh owners).
type Locker struct {
	c       *client.Client
	minHold time.Duration
}

// LockerOption configures a Locker.
type LockerOption func(*Locker) error

// WithMinHold sets how long a run keeps its tick marker, measured from the
// start of the run: longer than the schedulers' timers are apart (clock
// skew and start-up), shorter than the jobs' interval, or a scheduler would
// skip the next tick as taken. The default is 500ms.
func WithMinHold(d time.Duration) LockerOption {
	return func(l *Locker) error {
		if d < time.Millisecond || d%time.Millisecond != 0 {
			return messages.Invalid("min hold", "%v is not a whole number of milliseconds of at least 1ms", d)
		}
		l.minHold = d
		return nil
	}
}

// NewLocker returns a gocron.Locker whose locks are warden locks on c.
func NewLocker(c *client.Client, opts ...LockerOption) (*Locker, error) {
	if c == nil {
		return nil, messages.Invalid("client", "nil")
	}
	l := &Locker{c: c, minHold: 500 * time.Millisecond}
	for _, opt := range opts {
		if opt == nil {
			return nil, messages.Invalid("option", "nil")
		}
		if err := opt(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Lock takes the job's tick marker and then the job's lock, each in one
// attempt (gocron calls it when the job is due). It returns ErrJobLocked
// when another scheduler has this tick or still runs the job, and
// ErrInvalidArgument, before any Redis call, for a job name that is no
// valid warden lock name (empty, or longer than the longest name less the
// marker's prefix).
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if ctx == nil {
		return nil, messages.Invalid("ctx", "nil context")
	}
	switch {
	case key == "":
		return nil, messages.Invalid("job name", "empty")
	case len(runPrefix)+len(key)+1 > messages.MaxNameLen:
		return nil, messages.Invalid("job name", "%d bytes, more than %d", len(key), messages.MaxNameLen-len(runPrefix)-1)
	}
	marker := l.c.Lock(runPrefix + key + "}")
	ok, err := marker.TryLockWait(ctx, 0, l.minHold)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s: this tick ran elsewhere", ErrJobLocked, key)
	}
	job := l.c.Lock(key)
	if ok, err = job.TryLock(ctx); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s: still running elsewhere", ErrJobLocked, key)
	}
	return &jobLock{job}, nil
}

// jobLock is one run's hold of its job's lock.
type jobLock struct{ l *client.Lock }

// Unlock releases the job's lock (the tick marker expires by itself). It
// goes on when ctx is cancelled (gocron passes the job's context, which a
// scheduler's shutdown cancels), for at most 10 s.
func (j *jobLock) Unlock(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return j.l.Unlock(ctx)
}
