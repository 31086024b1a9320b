package quorum

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestQuorum(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		assert.Equal(t, want, Quorum(n), "n=%d", n)
	}
}

func TestNodeTimeoutAndDrift(t *testing.T) {
	assert.Equal(t, 100*time.Millisecond, NodeTimeout(10*time.Second))
	assert.Equal(t, 50*time.Millisecond, NodeTimeout(time.Second))
	assert.Equal(t, 102*time.Millisecond, Drift(10*time.Second))
	assert.Equal(t, 32*time.Millisecond, Drift(3*time.Second))
}

func TestHoldsAndValidity(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := ValidUntil(start, 10*time.Second)
	assert.Equal(t, start.Add(10*time.Second-102*time.Millisecond), end)
	assert.True(t, Holds(3, 2, start.Add(time.Second), end))
	assert.False(t, Holds(3, 1, start.Add(time.Second), end), "a minority")
	assert.False(t, Holds(5, 3, end, end), "no validity left")
	assert.True(t, Holds(5, 3, end.Add(-time.Nanosecond), end))
}

func TestOutOfReach(t *testing.T) {
	assert.False(t, OutOfReach(3, 1))
	assert.True(t, OutOfReach(3, 2))
	assert.False(t, OutOfReach(5, 2))
	assert.True(t, OutOfReach(5, 3))
}

func TestLost(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.False(t, Lost(3, 2, now, time.Time{}), "watchdog mode, a majority held")
	assert.True(t, Lost(3, 1, now, time.Time{}), "a minority left")
	assert.False(t, Lost(5, 3, now, now.Add(time.Millisecond)))
	assert.True(t, Lost(5, 3, now, now), "a fixed lease's validity ended")
}
