package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

// pauses returns the first n pauses of a waiter of owner's with back-off b.
func pauses(b messages.BackOff, owner string, n int) []time.Duration {
	w := &waiter{req: &messages.Acquire{Name: "n", Kind: messages.KindSpinLock, Owner: owner, RequestID: "r", BackOff: b}}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = w.poll.pause(w)
	}
	return out
}

// The pauses follow Redisson's ExponentialBackOffPolicy: the initial
// pause, then each the last times the multiplier plus 0 to fails-1 ms of
// jitter, capped at the maximum, which then repeats without jitter.
func TestSpinPollPauses(t *testing.T) {
	ms := time.Millisecond
	// LockOptionsTest's case: 10ms, ×3, at most 100ms.
	for i := range 20 {
		p := pauses(messages.BackOff{Initial: 10 * ms, Max: 100 * ms, Multiplier: 3}, fmt.Sprintf("c:%d", i), 6)
		assert.Equal(t, 10*ms, p[0])
		assert.Equal(t, 30*ms, p[1], "no jitter after the first pause")
		assert.Contains(t, []time.Duration{90 * ms, 91 * ms}, p[2])
		assert.Equal(t, []time.Duration{100 * ms, 100 * ms, 100 * ms}, p[3:], "capped, without jitter")
	}
	// The default: 1, 2, 4..5, 8..11, ... up to 128ms.
	seen := map[time.Duration]bool{}
	for i := range 50 {
		p := pauses(messages.BackOff{}, fmt.Sprintf("c:%d", i), 12)
		assert.Equal(t, []time.Duration{ms, 2 * ms}, p[:2])
		for j := 2; j < len(p); j++ {
			want := min(p[j-1]*2, 128*ms)
			assert.GreaterOrEqual(t, p[j], want, "pause %d of %v", j, p)
			assert.LessOrEqual(t, p[j], min(want+time.Duration(j)*ms, 128*ms), "pause %d of %v", j, p)
		}
		assert.Equal(t, 128*ms, p[len(p)-1], "reaches the maximum")
		seen[p[3]] = true
	}
	assert.Greater(t, len(seen), 1, "the jitter differs between waiters")
	// Constant.
	assert.Equal(t, []time.Duration{64 * ms, 64 * ms, 64 * ms}, pauses(messages.ConstantBackOff(64*ms), "c:1", 3))
	// Durations near the largest do not overflow.
	huge := time.Duration(1<<63 - 1)
	assert.Equal(t, []time.Duration{huge / 2, huge, huge}, pauses(messages.BackOff{Initial: huge / 2, Max: huge, Multiplier: 3}, "c:1", 3))
	for _, p := range pauses(messages.BackOff{Initial: huge - 1, Max: huge, Multiplier: 1}, "c:1", 5) {
		assert.GreaterOrEqual(t, p, huge-1, "the jitter did not wrap around")
	}
	// The same waiter gets the same pauses (a simulation replays them).
	assert.Equal(t, pauses(messages.BackOff{}, "c:7", 10), pauses(messages.BackOff{}, "c:7", 10))
}
