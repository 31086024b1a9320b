package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runRedLockSeeds(t *testing.T, o RedLockOptions, first int64, n int) []*RedLockResult {
	t.Helper()
	out, errs := RunRedLockSeeds(o, first, n)
	return noErrors(t, first, out, errs)
}

// TestRedLockSameSeedSameTrace runs seeds with every fault twice: each
// trace must hash the same both times, and differ between seeds.
func TestRedLockSameSeedSameTrace(t *testing.T) {
	o := RedLockOptions{Faults: AllFaults(), Length: 3 * time.Second}
	traces := func() []string {
		var out []string
		for _, res := range runRedLockSeeds(t, o, 1, 10) {
			require.NotZero(t, res.Attempts, "seed %d did nothing", res.Seed)
			out = append(out, res.Trace)
		}
		return out
	}
	sameTraces(t, 1, traces(), traces())
}

// TestRedLockFaultFreeRunsBreakNothing: without faults no check finds
// anything, and every run holds RedLocks, on both names, in both modes.
func TestRedLockFaultFreeRunsBreakNothing(t *testing.T) {
	for _, res := range runRedLockSeeds(t, RedLockOptions{Length: 2 * time.Second}, 100, 8) {
		assert.Empty(t, res.Violations, "seed %d", res.Seed)
		modes := map[bool]bool{}
		for _, h := range res.Holds {
			modes[h.Fixed] = true
			assert.GreaterOrEqual(t, h.Taken, 2, "seed %d: %+v", res.Seed, h)
		}
		assert.Len(t, modes, 2, "seed %d: holds in one mode only", res.Seed)
	}
}

// TestRedLockFaultRunsBreakOnlyWhatFaultsExcuse: with every fault, each
// violation must be one redLockLimits documents for a fault that hit it.
func TestRedLockFaultRunsBreakOnlyWhatFaultsExcuse(t *testing.T) {
	holds, excused := 0, 0
	for _, res := range runRedLockSeeds(t, RedLockOptions{Faults: AllFaults(), Length: 5 * time.Second}, 1, 30) {
		for _, v := range res.Failed() {
			t.Errorf("seed %d: %s at %v on %s: %s", res.Seed, v.Check, v.At, v.Name, v.What)
		}
		holds += len(res.Holds)
		excused += len(res.Violations)
	}
	assert.NotZero(t, holds)
	t.Logf("%d holds, %d excused violations over 30 seeds", holds, excused)
}

// TestBrokenRedLockIsCaught: owners that hold with one master granting
// (a quorum of 1) must break exclusion, unexcused, within 100 seeds: with
// the latency fault (which excuses nothing) two owners' tries cross, each
// taking some masters first.
func TestBrokenRedLockIsCaught(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		res, err := RunRedLock(RedLockOptions{Seed: seed, Length: 2 * time.Second, Faults: []FaultKind{FaultLatency}, quorum: 1})
		require.NoError(t, err)
		for _, v := range res.Failed() {
			if v.Check == checkRedLockExclusion {
				t.Logf("seed %d caught it: %s", seed, v.What)
				return
			}
		}
	}
	t.Fatal("a RedLock with a quorum of 1 broke nothing over 100 seeds")
}

func TestRedLockOptionsAreChecked(t *testing.T) {
	for _, o := range []RedLockOptions{{Length: time.Millisecond}, {Masters: -1}, {Watchdog: time.Millisecond},
		{LossRate: 2}, {Faults: []FaultKind{"meteor"}}} {
		_, err := RunRedLock(o)
		require.Error(t, err, "%+v", o)
	}
}
