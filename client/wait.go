package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-go/warden/messages"
)

// wait runs one Acquire through the engine and waits for its answer: the
// Acquired reply; nil and a nil error when a try's wait ran out; or the
// error. blocking selects the error contract of the blocking calls
// (ErrNotObtained, joined with the context's error when it ended the wait)
// over that of the Try calls (false, the context's error). When ctx ends
// first the request is cancelled; an Acquired that crossed the Cancel is
// handed to giveBack, which undoes it.
func (c *Client) wait(ctx context.Context, req *messages.Acquire, blocking bool, giveBack func(*messages.Acquired)) (*messages.Acquired, error) {
	if ctx.Err() != nil {
		return nil, waitCtxErr(ctx, blocking)
	}
	ch := c.request(req.RequestID, req)
	var reply any
	select {
	case reply = <-ch:
		c.mailbox.recycle(ch)
	case <-c.done:
		c.mailbox.forget(req.RequestID)
		select {
		case r := <-ch:
			if a, ok := r.(*messages.Acquired); ok && giveBack != nil {
				giveBack(a) // answered as the engine stopped: nobody will use it
			}
		default:
		}
		return nil, ErrClosed
	case <-ctx.Done():
		c.send(&messages.Cancel{Name: req.Name, Kind: req.Kind, Owner: req.Owner, RequestID: req.RequestID})
		r, err := c.await(ch, cancelWait)
		c.mailbox.forget(req.RequestID)
		if err != nil {
			return nil, errors.Join(waitCtxErr(ctx, blocking), err)
		}
		if a, ok := r.(*messages.Acquired); ok && giveBack != nil {
			giveBack(a) // acquired just before the cancel arrived
		}
		return nil, waitCtxErr(ctx, blocking)
	}
	switch r := reply.(type) {
	case *messages.Acquired:
		return r, nil
	case *messages.AcquireFailed:
		switch {
		case errors.Is(r.Err, messages.ErrTimeout):
			if blocking {
				return nil, ErrNotObtained
			}
			return nil, nil
		case errors.Is(r.Err, messages.ErrCancelled):
			return nil, waitCtxErr(ctx, blocking)
		}
		return nil, r.Err
	}
	return nil, fmt.Errorf("warden: unexpected reply %T", reply)
}

func waitCtxErr(ctx context.Context, blocking bool) error {
	if blocking {
		return errors.Join(ErrNotObtained, ctxErr(ctx))
	}
	return ctxErr(ctx)
}
