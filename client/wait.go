package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/warden-go/warden/messages"
)

// wait runs one Acquire through the engine and waits for its answer: the
// Acquired reply; nil and a nil error when a try's wait ran out; or the
// error. When ctx ends first the request is cancelled and the error, for
// blocking and Try calls alike, matches ErrNotObtained and the context's
// error (reqCtxErr); blocking tells a blocking call, whose wait the engine
// ending is ErrNotObtained, from a Try call, for which it is a wait that
// ran out (false, nil). An Acquired that crossed the Cancel is handed to
// giveBack, which undoes it.
func (c *Client) wait(ctx context.Context, req *messages.Acquire, blocking bool, giveBack func(*messages.Acquired)) (r *messages.Acquired, err error) {
	ctx, measured := c.tel.begin(ctx, meterKind(req.Kind), req.Name)
	returned := false // until waitReply returns: a panic in a call made on this goroutine
	defer func() { measured.endReturned(ctx, r != nil, err, returned) }()
	r, err = c.waitReply(ctx, req, blocking, giveBack)
	returned = true
	return r, err
}

// errCallPanicked is what telemetry records for a wait whose Redis call,
// made on the caller's goroutine, panicked (a hook of the user's client):
// the panic itself goes on to the caller.
var errCallPanicked = errors.New("warden: the Redis call panicked")

// endReturned ends c as end does when the measured call returned, and as
// an error (errCallPanicked), not as a wait that ran out, when it did not:
// the deferred call then runs while a panic of a Redis call made on the
// caller's goroutine unwinds.
func (c call) endReturned(ctx context.Context, ok bool, err error, returned bool) {
	if !returned {
		err = errCallPanicked
	}
	c.end(ctx, ok, err)
}

// waitReply is wait without its measurement.
func (c *Client) waitReply(ctx context.Context, req *messages.Acquire, blocking bool, giveBack func(*messages.Acquired)) (*messages.Acquired, error) {
	if ctx.Err() != nil {
		return nil, reqCtxErr(ctx, req, blocking)
	}
	ch, route := c.request(ctx, req.RequestID, req)
	var reply any
	select {
	case reply = <-ch:
		c.mailbox.recycle(ch)
	case <-c.done:
		c.mailbox.forget(req.RequestID)
		select {
		case r := <-ch:
			if a, ok := acquiredIn(r); ok && giveBack != nil {
				giveBack(a) // answered as the engine stopped: nobody will use it
			}
		default:
		}
		return nil, ErrClosed
	case <-ctx.Done():
		c.sendOn(route, &messages.Cancel{Name: req.Name, Kind: req.Kind, Owner: req.Owner, RequestID: req.RequestID})
		r, err := c.await(ch, cancelWait)
		c.mailbox.forget(req.RequestID)
		if err != nil {
			return nil, messages.Join(reqCtxErr(ctx, req, blocking), err)
		}
		if a, ok := acquiredIn(r); ok && giveBack != nil {
			giveBack(a) // acquired just before the cancel arrived
		}
		return nil, reqCtxErr(ctx, req, blocking)
	}
	switch r := reply.(type) {
	case *messages.Acquired:
		return r, nil
	case *backwardsError:
		return nil, r // the caller gives the hold back (Lock.acquire)
	case *messages.AcquireFailed:
		switch {
		case errors.Is(r.Err, messages.ErrTimeout):
			if blocking {
				return nil, &waitError{msg: notObtained(req), errs: []error{ErrNotObtained}}
			}
			return nil, nil
		case errors.Is(r.Err, messages.ErrCancelled):
			return nil, reqCtxErr(ctx, req, blocking)
		}
		return nil, r.Err
	}
	return nil, fmt.Errorf("warden: %s %s: unexpected reply %T", req.Kind, req.Name, reply)
}

// reqCtxErr is the error of a wait for req that ctx ended, the same for
// every call, blocking or Try: it matches ErrNotObtained and ctx's error
// (and its cause), in one line that names what was waited for, as in
// "warden: lock order:42 not obtained: context deadline exceeded". Should
// ctx not have ended (the engine gave the wait up by itself), it is
// ErrNotObtained for a blocking call and nil for a Try call, whose wait
// then ran out.
func reqCtxErr(ctx context.Context, req *messages.Acquire, blocking bool) error {
	return ctxWaitError(ctx, notObtained(req), blocking)
}

// waitCtxErr is reqCtxErr for a wait on several locks, which what names:
// "warden: multilock a, b not obtained: context deadline exceeded".
func waitCtxErr(ctx context.Context, what string, blocking bool) error {
	return ctxWaitError(ctx, "warden: "+what+" not obtained", blocking)
}

// ctxWaitError is "<what>: <ctx's error>", with ctx's cause in brackets
// when the canceller gave one, matching ErrNotObtained, ctx's error and
// its cause. Should ctx not have ended, it is what matching ErrNotObtained
// for a blocking call, nil for a Try call.
func ctxWaitError(ctx context.Context, what string, blocking bool) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if err == nil { // the engine gave the wait up by itself
		if !blocking {
			return nil // a Try call: as if its wait ran out
		}
		return &waitError{msg: what, errs: []error{ErrNotObtained}}
	}
	e := &waitError{msg: what + ": " + err.Error(), errs: []error{ErrNotObtained, err}}
	if cause != nil && cause != err {
		e.msg += " (cause: " + strings.TrimPrefix(strings.ReplaceAll(cause.Error(), "\n", "; "), "warden: ") + ")"
		e.errs = append(e.errs, cause)
	}
	return e
}

// notObtained says that req's wait ended without what it waited for.
func notObtained(req *messages.Acquire) string {
	switch req.Kind {
	case messages.KindSemaphore, messages.KindPermitSemaphore:
		n := max(req.Permits, 1) // a permit semaphore's acquire of one sends 0
		if n == 1 {
			return fmt.Sprintf("warden: 1 permit of %s %s not obtained", req.Kind, req.Name)
		}
		return fmt.Sprintf("warden: %d permits of %s %s not obtained", n, req.Kind, req.Name)
	case messages.KindCountDownLatch:
		return fmt.Sprintf("warden: %s %s not obtained (it did not reach zero)", req.Kind, req.Name)
	}
	return fmt.Sprintf("warden: %s %s not obtained", req.Kind, req.Name)
}

// waitError is a wait's error: a one-line text that names what was waited
// for, matching each of errs (the sentinel, the context's error and its
// cause) with errors.Is.
type waitError struct {
	msg  string
	errs []error
}

func (e *waitError) Error() string   { return e.msg }
func (e *waitError) Unwrap() []error { return e.errs }
