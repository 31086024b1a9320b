package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/warden-go/warden/redisio"
)

// lostError is the cause a Do gives its fn's context when the lock's
// holding is lost while fn runs, and the error Do then returns. It matches
// ErrLockLost, and ErrClosed as well when the holding ended because a
// Client it depends on was closed.
type lostError struct {
	what   string // the lock: "lock NAME", "multilock A, B", "redlock NAME"
	closed bool
}

func (e *lostError) Error() string {
	if e.closed {
		return "warden: " + e.what + " lost: client closed"
	}
	return "warden: " + e.what + " lost"
}

// Is matches ErrLockLost, and ErrClosed when a Close ended the holding.
func (e *lostError) Is(target error) bool {
	return target == ErrLockLost || (e.closed && target == ErrClosed)
}

// do is the Do of every lock type. It acquires m with Lock, runs fn with a
// context cancelled when m's holding is lost (the cause a *lostError), and
// releases one hold of m whatever fn does: the unlock is deferred, so a
// panic in fn (or a runtime.Goexit) still unlocks and stops the loss
// watcher, and then goes on. The unlock runs on a context detached from
// ctx, bounded by redisio.IOTimeout, so a ctx that ended does not leave
// the lock held. what names the lock in errors; closed reports whether a
// Client m depends on was closed. Both are called only once m is held.
//
// Do's error: fn's own when the holding stayed and the unlock succeeded;
// otherwise one line that matches ErrLockLost (and ErrClosed) when the
// holding was lost before the unlock, fn's error, and the unlock's error.
func do(ctx context.Context, m Mutex, what func() string, closed func() bool, fn func(ctx context.Context) error) (err error) {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if fn == nil {
		return invalid("fn", "nil")
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	lost := m.Lost()
	fctx, cancel := context.WithCancelCause(ctx)
	var lostErr error // set by the watcher before watched closes
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-lost:
			lostErr = &lostError{what: what(), closed: closed()}
			cancel(lostErr)
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		<-watched
		cancel(nil)
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), redisio.IOTimeout)
		defer ucancel()
		unlockErr := m.Unlock(uctx)
		err = doResult(what, closed, err, lostErr, unlockErr)
	}()
	return fn(fctx)
}

// doResult combines, in one line, what a Do saw: fn's error, the loss its
// watcher saw (nil if none), and the unlock's error.
func doResult(what func() string, closed func() bool, fnErr, lostErr, unlockErr error) error {
	if lostErr == nil && errors.Is(unlockErr, ErrNotHeld) {
		// Lost before the unlock, and not yet told: the holding was gone.
		lostErr = fmt.Errorf("%w: unlock: %w", &lostError{what: what(), closed: closed()}, bare(unlockErr))
	}
	switch {
	case lostErr != nil:
		// The unlock of a lost holding fails (ErrNotHeld, ErrClosed): no news.
		if fnErr == nil || errors.Is(fnErr, lostErr) {
			return lostErr // fn returned nothing, or context.Cause(ctx)
		}
		return fmt.Errorf("%w: %w", lostErr, bare(fnErr))
	case unlockErr == nil:
		return fnErr
	}
	unlockErr = fmt.Errorf("warden: %s: unlock: %w", what(), bare(unlockErr))
	if fnErr == nil {
		return unlockErr
	}
	if strings.HasPrefix(fnErr.Error(), "warden: ") {
		unlockErr = bare(unlockErr) // one prefix, fn's
	}
	return fmt.Errorf("%w; %w", fnErr, unlockErr)
}
