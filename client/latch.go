package client

import (
	"context"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// CountDownLatch is a handle on a count-down latch (Redisson's
// RCountDownLatch): waiters block until CountDown calls bring the count to
// zero. A latch that does not exist counts zero. A handle is safe for
// concurrent use.
type CountDownLatch struct {
	c    *Client
	name string
	err  error
}

// CountDownLatch returns a handle on the count-down latch name.
func (c *Client) CountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{c: c, name: name, err: validateNameFor(c, messages.KindCountDownLatch, name)}
}

// Name returns the latch's name, its Redis key ("" for a nil handle).
func (d *CountDownLatch) Name() string {
	if d == nil {
		return ""
	}
	return d.name
}

func (d *CountDownLatch) check() error {
	if d == nil || d.c == nil {
		return invalid("latch", "nil handle")
	}
	if d.err != nil {
		return d.err
	}
	return d.c.errClosed()
}

// TrySetCount sets the count (at least 1) if the latch does not exist; it
// reports whether it did.
func (d *CountDownLatch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(d.check(), validateCount("count", count)); err != nil {
		return false, err
	}
	if count == 0 {
		return false, invalid("count", "0: a latch counts down from at least 1")
	}
	return d.c.scripts.LatchTrySetCount(ctx, d.c.rdb, d.name, count)
}

// CountDown decrements the count; at zero the latch is deleted and every
// waiter released. The count never goes below zero.
func (d *CountDownLatch) CountDown(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	if err := d.check(); err != nil {
		return err
	}
	_, err := d.c.scripts.LatchCountDown(ctx, d.c.rdb, d.name, d.c.nextRequestID())
	return err
}

// Delete deletes the latch and reports whether it existed. A missing
// latch counts zero, so every waiter, here and in other processes, is
// released.
func (d *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := d.check(); err != nil {
		return false, err
	}
	return d.c.scripts.LatchDelete(ctx, d.c.rdb, d.name)
}

// Count returns the current count, 0 when the latch does not exist.
func (d *CountDownLatch) Count(ctx context.Context) (int64, error) {
	if err := checkCtx(ctx); err != nil {
		return 0, err
	}
	if err := d.check(); err != nil {
		return 0, err
	}
	return redisio.LatchCount(ctx, d.c.rdb, d.name)
}

// Await waits until the count reaches zero (at once if the latch does not
// exist) or ctx ends (then the error is ErrNotObtained joined with the
// context's error).
func (d *CountDownLatch) Await(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	_, err := d.await(ctx, time.Time{}, true)
	return err
}

// TryAwait waits up to wait for the count to reach zero; it returns false,
// with a nil error, when wait runs out first.
func (d *CountDownLatch) TryAwait(ctx context.Context, wait time.Duration) (bool, error) {
	if err := checkCtx(ctx); err != nil {
		return false, err
	}
	if err := messages.Join(d.check(), validateWait(wait)); err != nil {
		return false, err
	}
	return d.await(ctx, d.c.opts.clock.Now().Add(wait), false)
}

func (d *CountDownLatch) await(ctx context.Context, deadline time.Time, blocking bool) (bool, error) {
	if err := d.check(); err != nil {
		return false, err
	}
	req := &messages.Acquire{Name: d.name, Kind: messages.KindCountDownLatch, Owner: d.c.id,
		RequestID: d.c.nextRequestID(), Deadline: deadline}
	r, err := d.c.wait(ctx, req, blocking, nil)
	return r != nil, err
}
