package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

func TestLatchTrySetCountOnlyOnce(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		d := c.CountDownLatch("latch-set")
		for _, bad := range []int64{0, -1} {
			_, err := d.TrySetCount(ctx, bad)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "count %d", bad)
		}
		_, err := c.CountDownLatch("").TrySetCount(ctx, 1)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
		assert.Zero(t, get(t, d.Count), "a missing latch counts 0")

		set(t, d.TrySetCount, 2)
		ok, err := d.TrySetCount(ctx, 5)
		require.NoError(t, err)
		assert.False(t, ok, "TrySetCount only once")
		assert.Equal(t, int64(2), get(t, d.Count))
		assert.Equal(t, "2", e.rdb.Get(ctx, "latch-set").Val())
	})
}

func TestLatchCountDownToZeroDeletesTheKey(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		d := e.newClient(t).CountDownLatch("latch-down")
		set(t, d.TrySetCount, 2)
		require.NoError(t, d.CountDown(ctx))
		assert.Equal(t, int64(1), get(t, d.Count))
		assert.Equal(t, "1", e.rdb.Get(ctx, "latch-down").Val())
		require.NoError(t, d.CountDown(ctx))
		assert.Zero(t, get(t, d.Count))
		assert.Zero(t, e.rdb.Exists(ctx, "latch-down").Val(), "deleted at zero")

		// Never below zero: an extra CountDown keeps 0 and writes nothing.
		require.NoError(t, d.CountDown(ctx))
		require.NoError(t, d.CountDown(ctx))
		assert.Zero(t, get(t, d.Count))
		assert.Zero(t, e.rdb.Exists(ctx, "latch-down").Val())

		// A latch set anew counts down again.
		set(t, d.TrySetCount, 1)
		require.NoError(t, d.CountDown(ctx))
		assert.Zero(t, get(t, d.Count))
		assert.Zero(t, e.rdb.Exists(ctx, "latch-down").Val())
	})
}

func TestLatchAwaitOnMissingLatchReturnsAtOnce(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := e.newClient(t).CountDownLatch("latch-missing")
		start := time.Now()
		require.NoError(t, d.Await(ctx), "no latch, nothing to wait for")
		ok, err := d.TryAwait(ctx, 0)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = d.TryAwait(ctx, time.Minute)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Less(t, time.Since(start), 2*time.Second, "at once, without the clock moving")

		set(t, d.TrySetCount, 1)
		ok, err = d.TryAwait(ctx, 0)
		require.NoError(t, err)
		assert.False(t, ok, "a set latch makes a zero wait fail")
		require.NoError(t, d.CountDown(ctx))
		require.NoError(t, d.Await(ctx), "counted down: returns at once")
	})
}

// Five Awaits on two clients (Redisson's awaitAsync test) stay blocked at
// count 1, through a look-again on the fake clock, and are all released by
// the last CountDown's zero message: their own look-agains are out of
// reach.
func TestLatchAwaitWakesAllWaiters(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-wake-all"
		clients := []*client.Client{messageWaiterClient(t, e), messageWaiterClient(t, e)}
		set(t, clients[0].CountDownLatch(name).TrySetCount, 5)
		waiters := newBackground(t, 5)
		for i := range 5 {
			waiters.run(i, clients[i%2].CountDownLatch(name).Await)
		}
		returned := waiters.C
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 2)
		time.Sleep(50 * time.Millisecond) // every waiter queued and refused

		counter := e.newClient(t).CountDownLatch(name)
		for range 4 {
			require.NoError(t, counter.CountDown(ctx))
		}
		assert.Equal(t, int64(1), get(t, counter.Count))
		staysBlocked(t, e, returned, 500*time.Millisecond, "an Await at count 1")

		require.NoError(t, counter.CountDown(ctx))
		for range 5 {
			r := wokenByMessage(t, returned, "each of the five waiters")
			require.NoError(t, r.err, "waiter %d", r.i)
		}
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	})
}

// N count-downs run at once from goroutines on two clients on a latch set
// to N, while six Awaits on both clients wait (Redisson's concurrent latch
// test): the count ends at 0 and the key is gone; every Await returns nil,
// within messageWakeBound of real time (the zero message wakes them), and
// sees count 0 when it does. More count-downs, at once, past zero leave
// the count at 0: the key never holds a value below 0, and the channel
// carries one zero message in all.
func TestLatchConcurrentCountDownsReleaseEveryWaiterOnce(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-concurrent"
		const n, awaiters, extra = 16, 6, 8
		clients := []*client.Client{messageWaiterClient(t, e), messageWaiterClient(t, e)}
		set(t, clients[0].CountDownLatch(name).TrySetCount, n)

		waiters := newBackground(t, awaiters)
		for i := range awaiters {
			d := clients[i%2].CountDownLatch(name)
			waiters.run(i, func(ctx context.Context) error {
				if err := d.Await(ctx); err != nil {
					return err
				}
				if count, err := d.Count(ctx); err != nil || count != 0 {
					return fmt.Errorf("released at count %d (%v)", count, err)
				}
				return nil
			})
		}
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 2)
		time.Sleep(50 * time.Millisecond) // every Await queued and refused

		// The test listens on the channel too, to count the zero messages.
		sub := e.rdb.Subscribe(ctx, redisio.LatchChannel(name))
		defer func() { _ = sub.Close() }()
		_, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err, "the subscription confirmed")
		published := sub.Channel()

		// A reader watches the key for a value below 0 meanwhile.
		var below atomic.Int64
		look := func() {
			if v, err := e.rdb.Get(ctx, name).Int64(); err == nil && v < 0 {
				below.Store(v)
			}
		}
		inBackground(t, func(ctx context.Context) error {
			for ctx.Err() == nil {
				look()
				time.Sleep(time.Millisecond)
			}
			return nil
		})

		countDownAtOnce := func(k int) {
			t.Helper()
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range k {
				d := clients[i%2].CountDownLatch(name)
				wg.Go(func() {
					<-start
					assert.NoError(t, d.CountDown(ctx))
				})
			}
			close(start)
			await.Group(t, &wg, 10*time.Second, "the count-downs")
		}

		countDownAtOnce(n)
		assert.Zero(t, get(t, clients[0].CountDownLatch(name).Count))
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "deleted at zero")
		for range awaiters {
			r := wokenByMessage(t, waiters.C, "an Await")
			require.NoError(t, r.err, "Await %d", r.i)
		}

		countDownAtOnce(extra)
		look()
		assert.Zero(t, get(t, clients[1].CountDownLatch(name).Count), "count-downs past zero")
		assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "no key written past zero")
		assert.Zero(t, below.Load(), "the key never held a value below 0")
		m := await.Value(t, published, 2*time.Second, "the zero message")
		assert.Equal(t, redisio.LatchZeroMessage, m.Payload)
		time.Sleep(100 * time.Millisecond)
		select {
		case m := <-published:
			t.Errorf("a second message %q: the count reached zero once", m.Payload)
		default:
		}
	})
}

func TestLatchTryAwaitGivesUpAfterItsWait(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		d := e.newClient(t).CountDownLatch("latch-try-out")
		set(t, d.TrySetCount, 1)
		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() { ok, err := d.TryAwait(ctx, 500*time.Millisecond); done <- result{ok, err} }()
		r, took := awaitWhileTime(t, e, done, 3*time.Second, "TryAwait(500ms)")
		require.NoError(t, r.err, "a wait that runs out is not an error")
		assert.False(t, r.ok)
		assert.GreaterOrEqual(t, took, 490*time.Millisecond, "not before its wait ran out")
		assert.Less(t, took, 2*time.Second, "soon after its wait ran out")
		require.NoError(t, d.CountDown(ctx)) // counted down after the wait ended
		assert.Zero(t, get(t, d.Count))
	})
}

func TestLatchTryAwaitCountedDownInTime(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-try-in-time"
		c := e.newClient(t)
		set(t, c.CountDownLatch(name).TrySetCount, 1)
		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		waiter := e.newClient(t).CountDownLatch(name)
		start := e.clk.Now()
		go func() {
			ok, err := waiter.TryAwait(ctx, 2*time.Second)
			done <- result{ok, err}
		}()
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 1)
		e.advance(500 * time.Millisecond)
		require.NoError(t, c.CountDownLatch(name).CountDown(ctx))
		r, _ := awaitWhileTime(t, e, done, 3*time.Second, "TryAwait(2s) counted down at 500ms")
		require.NoError(t, r.err)
		assert.True(t, r.ok)
		assert.Less(t, e.clk.Now().Sub(start), 2*time.Second, "before its wait ran out")
	})
}

func TestLatchCancelledAwait(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-cancel"
		d := e.newClient(t).CountDownLatch(name)
		set(t, d.TrySetCount, 1)

		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Await(actx) }()
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 1)
		cancel()
		err := await.Value(t, done, 2*time.Second, "a cancelled Await returning promptly")
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.Canceled)

		err = d.Await(actx)
		require.ErrorIs(t, err, client.ErrNotObtained, "already cancelled")
		require.ErrorIs(t, err, context.Canceled)
		ok, err := d.TryAwait(actx, time.Second)
		assert.False(t, ok)
		require.ErrorIs(t, err, context.Canceled)

		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer dcancel()
		err = d.Await(dctx)
		require.ErrorIs(t, err, client.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		assert.Equal(t, int64(1), get(t, d.Count), "the count is untouched")
		eventually(t, 3*time.Second, func() bool {
			return e.rdb.PubSubNumSub(ctx, redisio.LatchChannel(name)).Val()[redisio.LatchChannel(name)] == 0
		}, "no subscription left")
	})
}

func TestLatchLostMessageDoesNotHangTheWaiter(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		const name = "latch-lost-msg"
		d := e.newClient(t).CountDownLatch(name)
		set(t, d.TrySetCount, 3)
		done := make(chan error, 1)
		go func() { done <- d.Await(ctx) }()
		awaitCountSubscribers(t, e, redisio.LatchChannel(name), 1)
		// The latch goes without its zero message: the look-again sees it.
		withoutMessage(t, e, done, func() error { return e.rdb.Del(ctx, name).Err() })
		err, took := awaitWhileTime(t, e, done, 5*time.Second, "the waiter, without a zero message")
		require.NoError(t, err)
		assert.Less(t, took, watchdog/3+time.Second, "within the look-again bound")
	})
}
