package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
)

// A burst of work larger than the pool starts goroutines of its own; at
// most poolWorkers goroutines stay in the pool afterwards, they all end at
// Stop (TestMain checks that none is left), and work scheduled after Stop
// runs on the caller's goroutine.
func TestWorkersKeepABoundedPool(t *testing.T) {
	w := NewWorkers()
	const burst = poolWorkers + 36
	var started atomic.Int32
	release := make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // should the test fail before it releases them
	var done sync.WaitGroup
	done.Add(burst)
	for range burst {
		w.Schedule(func() {
			defer done.Done()
			started.Add(1)
			<-release // every job runs at once: each needs a goroutine
		})
	}
	require.Eventually(t, func() bool { return started.Load() == burst }, 5*time.Second, time.Millisecond,
		"every job of the burst runs at once")
	released.Do(func() { close(release) })
	await.Group(t, &done, 5*time.Second, "the burst")
	require.Eventually(t, func() bool { return w.pooled.Load() == poolWorkers }, 5*time.Second, time.Millisecond,
		"the pool keeps poolWorkers goroutines (has %d)", w.pooled.Load())

	// The kept goroutines take new work.
	var again sync.WaitGroup
	again.Add(poolWorkers)
	for range poolWorkers {
		w.Schedule(again.Done)
	}
	await.Group(t, &again, 5*time.Second, "work on the kept goroutines")
	assert.Equal(t, int32(poolWorkers), w.pooled.Load(), "no goroutine joined a full pool")

	w.Stop()
	ran := false
	w.Schedule(func() { ran = true })
	assert.True(t, ran, "work after Stop runs on the caller's goroutine")
}
