package client_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// Goroutines that share one handle's Locker (and the Lockers of one
// handle) exclude each other as with a sync.Mutex, while the handle stays
// one owner in Redis, which other handles wait for.
func TestLockerExcludesGoroutinesSharingIt(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	h := c.Lock("locker-shared")
	const goroutines, rounds = 4, 8
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		k := h.Locker()
		if g%2 == 1 {
			k = h.Locker() // another Locker of the same handle
		}
		wg.Go(func() {
			for range rounds {
				k.Lock()
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				k.Unlock()
			}
		})
	}
	await.Group(t, &wg, time.Minute, "the goroutines sharing the Locker")
	t.Logf("most goroutines inside at once: %d of %d", most.Load(), goroutines)
	assert.Equal(t, int64(1), most.Load(), "one goroutine inside at a time")
	locked, err := h.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "every Unlock released")

	k := h.Locker()
	k.Lock()
	n, err := h.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one hold of the handle's owner")
	ok, err := c.Lock("locker-shared").TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "another handle is excluded in Redis")
	k.Unlock()
	assert.PanicsWithError(t, "warden: locker-shared: unlock of an unlocked Locker: "+client.ErrNotHeld.Error(),
		k.Unlock, "Unlock of an unlocked Locker")
}
