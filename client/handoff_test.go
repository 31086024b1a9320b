package client_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// An unlock with a local waiter hands the lock on in its own round trip:
// by the time Unlock returns, Redis already names the waiter as holder.
func TestLocalHandoffInTheUnlocksRoundTrip(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"lock", "fenced", "fair", "nonreentrant-fair"} {
		t.Run(kind, func(t *testing.T) {
			e := realEnv(t)
			c := e.newClient(t)
			ctx := testCtx(t)
			type handle interface {
				client.Mutex
				Owner() string
				HoldCount(context.Context) (int, error)
			}
			lock := func() handle {
				switch kind {
				case "fenced":
					return c.FencedLock("handoff")
				case "fair":
					return c.FairLock("handoff")
				case "nonreentrant-fair":
					return c.NonReentrantFairLock("handoff")
				}
				return c.Lock("handoff")
			}
			holder, waiter := lock(), lock()
			require.NoError(t, holder.Lock(ctx))
			got := inBackground(t, waiter.Lock)
			eventually(t, 5*time.Second, func() bool {
				if strings.Contains(kind, "fair") {
					return e.rdb.LLen(ctx, "redisson_lock_queue:{handoff}").Val() == 1
				}
				return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{handoff}").Val()["redisson_lock__channel:{handoff}"] == 1
			}, "the waiter waits")
			require.NoError(t, holder.Unlock(ctx))
			assert.Equal(t, "1", e.rdb.HGet(ctx, "handoff", waiter.Owner()).Val(), "held by the waiter as Unlock returns")
			require.NoError(t, await.Value(t, got, 5*time.Second, "the waiter's Lock").err)
			assert.Equal(t, 1, get(t, waiter.HoldCount))
			require.NoError(t, waiter.Unlock(ctx))
			assert.Zero(t, e.rdb.Exists(ctx, "handoff", "redisson_lock_queue:{handoff}", "redisson_lock_timeout:{handoff}").Val())
		})
	}
}

// A fair lock hands on locally only in the queue's order: a local waiter
// that queued behind another process's waiter does not jump it when a
// local holder unlocks; the other process's waiter holds next, then the
// local one.
func TestFairHandoffKeepsTheQueuesOrder(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	local, remote := e.newClient(t), e.newClient(t)
	ctx := testCtx(t)
	holder, r, w := local.FairLock("handoff"), remote.FairLock("handoff"), local.FairLock("handoff")
	require.NoError(t, holder.Lock(ctx))
	rgot := inBackground(t, r.Lock)
	queued := func(n int64) func() bool {
		return func() bool { return e.rdb.LLen(ctx, "redisson_lock_queue:{handoff}").Val() == n }
	}
	eventually(t, 5*time.Second, queued(1), "the other process's waiter queues")
	wgot := inBackground(t, w.Lock)
	eventually(t, 5*time.Second, queued(2), "the local waiter queues behind it")
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, await.Value(t, rgot, 5*time.Second, "the other process's waiter").err)
	assert.Equal(t, "1", e.rdb.HGet(ctx, "handoff", r.Owner()).Val(), "the queue's head holds")
	assert.False(t, e.rdb.HExists(ctx, "handoff", w.Owner()).Val(), "the local waiter waits its turn")
	assert.Equal(t, []string{w.Owner()}, e.rdb.LRange(ctx, "redisson_lock_queue:{handoff}", 0, -1).Val())
	require.NoError(t, r.Unlock(ctx))
	require.NoError(t, await.Value(t, wgot, 5*time.Second, "the local waiter").err)
	require.NoError(t, w.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "handoff", "redisson_lock_queue:{handoff}").Val())
}

// Local owners that hand the lock to each other without a pause do not
// starve another process's waiter: every few handoffs an unlock goes
// alone.
func TestLocalHandoffsLetARemoteWaiterIn(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	local, remote := e.newClient(t), e.newClient(t)
	ctx := testCtx(t)
	var stop atomic.Bool
	var rounds atomic.Int64
	var h holders
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := local.Lock("handoff:fair")
			for !stop.Load() {
				if !assert.NoError(t, l.Lock(ctx)) {
					return
				}
				h.enter()
				rounds.Add(1)
				h.leave()
				if !assert.NoError(t, l.Unlock(ctx)) {
					return
				}
			}
		}()
	}
	eventually(t, 5*time.Second, func() bool { return rounds.Load() > 50 }, "the local owners take turns")
	r := remote.Lock("handoff:fair")
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := r.Lock(rctx)
	stop.Store(true)
	require.NoError(t, err, "the remote waiter got in while %d local turns went by", rounds.Load())
	h.enter()
	h.leave()
	require.NoError(t, r.Unlock(ctx))
	await.Group(t, &wg, 10*time.Second, "the local owners")
	assert.LessOrEqual(t, h.max.Load(), int32(1))
}
