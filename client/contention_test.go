package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/internal/await"
)

// holders counts who is inside a critical section and remembers the most
// at once.
type holders struct {
	now, max atomic.Int32
}

func (h *holders) enter() {
	n := h.now.Add(1)
	for {
		m := h.max.Load()
		if n <= m || h.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (h *holders) leave() { h.now.Add(-1) }

// contend runs n contenders, each iterations times: acquire(i), enter the
// critical section (a read, a pause and a write of a shared counter, which
// overlapping holders would get wrong), release(i). It fails the test
// unless the counter is exact and no more than limit were ever inside at
// once.
func contend(t *testing.T, n, iterations int, limit int32, acquire, release func(i int) error) {
	t.Helper()
	var h holders
	var mu sync.Mutex // guards counter only where limit > 1 allows overlap
	counter := 0
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range iterations {
				if err := acquire(i); err != nil {
					t.Error(err)
					return
				}
				h.enter()
				if limit == 1 {
					v := counter
					time.Sleep(50 * time.Microsecond)
					counter = v + 1
				} else {
					time.Sleep(50 * time.Microsecond)
					mu.Lock()
					counter++
					mu.Unlock()
				}
				h.leave()
				if err := release(i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	await.Group(t, &wg, 2*time.Minute, "the contenders")
	assert.Equal(t, n*iterations, counter)
	assert.LessOrEqual(t, h.max.Load(), limit, "never more holders than the limit")
	assert.Positive(t, h.max.Load())
}

// contendLocks runs contend with one contender per lock, each taking its
// lock (Lock, Unlock) iterations times, one holder at a time.
func contendLocks[L interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}](t *testing.T, locks []L, iterations int) {
	t.Helper()
	ctx := testCtx(t)
	contend(t, len(locks), iterations, 1,
		func(i int) error { return locks[i].Lock(ctx) },
		func(i int) error { return locks[i].Unlock(ctx) })
}
