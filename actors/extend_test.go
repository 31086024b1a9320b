package actors

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/messages"
)

// The protocol of Extend, message by message: a holder's fixed lease is
// set anew (Redis's TTL follows); another owner, and an owner that holds
// nothing, get ErrNotHeld without a Redis call; a watchdog holding gets
// ErrInvalidArgument naming the lease; a holding gone from Redis gets
// ErrNotHeld and its watchers LockLost.
func TestProtocolExtend(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	ctx := context.Background()
	events := e.request(&messages.Acquire{Name: "x", Owner: "o1", RequestID: "a1", Lease: time.Second, Watch: true})
	a := await.Value(t, events, 5*time.Second, "the acquire's answer").(*messages.Acquired)

	ok := e.ask(t, &messages.Extend{Name: "x", Owner: "o1", RequestID: "e1", Lease: time.Minute}).(*messages.Extended)
	assert.Equal(t, a.Holding, ok.Holding)
	assert.Greater(t, e.rdb.PTTL(ctx, "x").Val(), 50*time.Second)

	f := e.ask(t, &messages.Extend{Name: "x", Owner: "o2", RequestID: "e2", Lease: time.Minute}).(*messages.ExtendFailed)
	require.ErrorIs(t, f.Err, messages.ErrNotHeld)
	assert.Zero(t, f.Holding)

	e.ask(t, &messages.Acquire{Name: "w", Owner: "o1", RequestID: "a2"})
	f = e.ask(t, &messages.Extend{Name: "w", Owner: "o1", RequestID: "e3", Lease: time.Minute}).(*messages.ExtendFailed)
	require.ErrorIs(t, f.Err, messages.ErrInvalidArgument)
	assert.Contains(t, f.Err.Error(), "lease:")
	assert.LessOrEqual(t, e.rdb.PTTL(ctx, "w").Val(), 30*time.Second, "the watchdog's lease is untouched")

	require.NoError(t, e.rdb.Del(ctx, "x").Err())
	f = e.ask(t, &messages.Extend{Name: "x", Owner: "o1", RequestID: "e4", Lease: time.Minute}).(*messages.ExtendFailed)
	require.ErrorIs(t, f.Err, messages.ErrNotHeld)
	assert.Equal(t, a.Holding, f.Holding)
	lost := await.Value(t, events, 5*time.Second, "LockLost to the watcher").(*messages.LockLost)
	assert.Equal(t, a.Holding, lost.Holding)
	require.ErrorIs(t, lost.Err, messages.ErrLockLost)
	assert.Zero(t, e.rdb.Exists(ctx, "x").Val(), "the extend wrote nothing")
}

// The non-reentrant kinds, message by message: the holder's second
// Acquire is answered AcquireFailed with ErrAlreadyHeld at once, even with
// no deadline, and the holding stays as it was (one Release frees it).
func TestProtocolNonReentrantRefusesTheHolder(t *testing.T) {
	e := startEngine(t, redistest.Start(t).Client(t))
	ctx := context.Background()
	for _, kind := range []messages.Kind{messages.KindNonReentrantLock, messages.KindNonReentrantFairLock} {
		name := "nr-" + kind.String()
		a := e.ask(t, &messages.Acquire{Name: name, Kind: kind, Owner: "o1", RequestID: "a1"}).(*messages.Acquired)
		assert.Equal(t, 1, a.HoldCount)
		f := e.ask(t, &messages.Acquire{Name: name, Kind: kind, Owner: "o1", RequestID: "a2"}).(*messages.AcquireFailed)
		require.ErrorIs(t, f.Err, messages.ErrAlreadyHeld, "%s", kind)
		assert.Equal(t, "1", e.rdb.HGet(ctx, name, "o1").Val())
		w := e.ask(t, &messages.Watch{Name: name, Kind: kind, Owner: "o1"}).(*messages.Watched)
		assert.Equal(t, a.Holding, w.Holding, "the same holding")
		r := e.ask(t, &messages.Release{Name: name, Kind: kind, Owner: "o1", RequestID: "r1"}).(*messages.Released)
		assert.Zero(t, r.Remaining, "one release frees it")
		assert.Zero(t, e.rdb.Exists(ctx, name).Val())
	}
}
