package sim

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/messages"
)

// runSeeds runs seeds first..first+n-1 with o (its Seed replaced) and
// returns the results by seed.
func runSeeds(t *testing.T, o Options, first int64, n int) []*Result {
	t.Helper()
	out, errs := RunSeeds(o, first, n)
	return noErrors(t, first, out, errs)
}

// noErrors fails t on any seed's error and returns the results.
func noErrors[R any](t *testing.T, first int64, out []R, errs []error) []R {
	t.Helper()
	for i, err := range errs {
		require.NoError(t, err, "seed %d", first+int64(i))
	}
	return out
}

// sameTraces checks that two runs of the seeds from first on gave each
// seed the same trace hash both times, and different seeds different ones.
func sameTraces(t *testing.T, first int64, a, b []string) {
	t.Helper()
	require.Len(t, b, len(a))
	seen := map[string]int64{}
	for i := range a {
		seed := first + int64(i)
		require.Equal(t, a[i], b[i], "seed %d replayed differently", seed)
		if s, dup := seen[a[i]]; dup {
			t.Fatalf("seeds %d and %d gave the same trace", s, seed)
		}
		seen[a[i]] = seed
	}
}

// TestSameSeedSameTrace runs 100 seeds with every fault twice: each trace
// must hash the same both times, and differ between seeds.
func TestSameSeedSameTrace(t *testing.T) {
	o := Options{Faults: AllFaults(), Length: 5 * time.Second}
	traces := func() []string {
		var out []string
		for _, res := range runSeeds(t, o, 1, 100) {
			require.NotEmpty(t, res.Ops, "seed %d did nothing", res.Seed)
			out = append(out, res.Trace)
		}
		return out
	}
	sameTraces(t, 1, traces(), traces())
}

// TestFaultFreeRunsBreakNothing: without faults no check may find
// anything, excused or not, and every owner gets the lock.
func TestFaultFreeRunsBreakNothing(t *testing.T) {
	for _, res := range runSeeds(t, Options{Length: 10 * time.Second}, 1000, 20) {
		assert.Empty(t, res.Violations, "seed %d", res.Seed)
		assert.Empty(t, res.Unknown, "seed %d", res.Seed)
		assert.NotEmpty(t, res.Holds, "seed %d", res.Seed)
	}
}

// TestFaultRunsBreakOnlyWhatFaultsExcuse: with every fault, each violation
// found must be one Limits documents for a fault that hit the run.
func TestFaultRunsBreakOnlyWhatFaultsExcuse(t *testing.T) {
	excused := 0
	for _, res := range runSeeds(t, Options{Faults: AllFaults(), Length: 10 * time.Second}, 2000, 30) {
		for _, v := range res.Failed() {
			t.Errorf("seed %d: %s at %v on %s: %s", res.Seed, v.Check, v.At, v.Name, v.What)
		}
		assert.Empty(t, res.Unknown, "seed %d", res.Seed)
		excused += len(res.Violations)
	}
	t.Logf("%d excused violations over 30 seeds", excused)
}

func TestTraceKeepsLines(t *testing.T) {
	res, err := Run(Options{Seed: 7, Length: 2 * time.Second, KeepTrace: true, Kinds: []messages.Kind{messages.KindLock}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Lines)
	require.Contains(t, res.Lines[0], " c")
}

func TestOptionsAreChecked(t *testing.T) {
	_, err := Run(Options{Length: time.Millisecond})
	require.Error(t, err)
	_, err = Run(Options{Kinds: []messages.Kind{messages.Kind(99)}}) // no such kind
	require.Error(t, err)
	for _, o := range []Options{{Permits: -1}, {Lease: -time.Second}, {Latency: -time.Millisecond}, {LossRate: 1.5}} {
		_, err = Run(o)
		require.Error(t, err, "%+v", o)
	}
	_, err = ParseFaults("latency,meteor")
	require.Error(t, err)
	f, err := ParseFaults("all")
	require.NoError(t, err)
	require.Equal(t, AllFaults(), f)
}

// lockKinds were the workload's kinds before it used the permit-expirable
// semaphore and the count-down latch. With them a seed replayed the run it
// gave then, byte for byte, until the workload began to mix lease modes on
// read locks and to downgrade write locks: the seeds found before that now
// run other histories, kept as regression runs.
var lockKinds = []messages.Kind{messages.KindLock, messages.KindFencedLock, messages.KindFairLock,
	messages.KindReadLock, messages.KindWriteLock, messages.KindSemaphore}

// TestSeedsThatOnceFailed replays seeds that found a defect, each with the
// options it failed with (warden-sim's defaults: 10 s runs; the first four
// with lockKinds), without MultiLocks, which joined the workload after them
// (NoMultiLocks replays the workload from before, byte for byte):
//   - 5079, no faults: a read lock's hash took a surviving hold's PTTL in
//     whole milliseconds and expired just before the engine told its owner
//     (fixed: the engine counts a lease as ending ttlGrain early);
//   - 1630, every fault: a pause held an acquire's answer back, and the
//     fencing check ordered tokens by when owners learned them;
//   - 1904, every fault: a clock jump hit the holder while its acquire was in
//     flight, before the hold began, so it was not seen as the excuse;
//   - 5548, every fault: a pause held back the later owner's grant past its
//     lease, and only the earlier holder's faults were looked at;
//   - 622, every fault: a partitioned owner's read lock ran out unrenewed
//     between two renewal ticks, and the renewer told it at the next tick,
//     after another owner took the lock (fixed: an expiry timer);
//   - 2400 and 3779, every fault: a write lock's unlock of one hold, its
//     reply lost, set the lease shorter than the reentries had made it,
//     and the owner was told at the longer end;
//   - 202, every fault: a latch await's read was lost, and the latch's zero
//     message did not answer it while the read was in flight (fixed: the
//     message answers it); it waited past the run's end.
//
// Then, with mixed lease modes on read locks and downgrades in the workload
// (no faults unless said; these replay the failing runs exactly):
//   - 26: a watchdog read hold, reentered with a 5 s lease whose hold was
//     then released, was no longer renewed; Redis dropped it while its
//     owner believed it held (fixed: renewed while any hold is in
//     watchdog mode);
//   - 69, and 83 and 551 with every fault: a downgraded owner's 5 s read
//     hold was cut by its write hold's renewal (fixed: the write side only
//     raises the shared hash's TTL);
//   - 144: a renewal set an owner's explicit 5 s read hold to the 3 s
//     watchdog TTL (fixed: a renewal never cuts a hold's own lease);
//   - 569: a downgraded owner's read hold ended and its owner was told, but
//     the hash kept the write hold's TTL, so a writer's try was refused
//     while nobody held the lock (fixed: the read holds are given back);
//   - 1923: a downgrade published nothing (as in Redisson), so a reader
//     waiting on the write slept until the hash's TTL while it could share
//     the lock (fixed: a downgrade publishes the wake-all message);
//   - 1144, a checker defect: a try landed in the millisecond between an
//     owner being told its 2 s lease ended and Redis letting the lock go,
//     and was refused; the linearizability model dropped the hold no later
//     than the telling (now: up to a trip and Redis's clock grain after).
func TestSeedsThatOnceFailed(t *testing.T) {
	for _, c := range []struct {
		seed   int64
		faults []FaultKind
		kinds  []messages.Kind
	}{{5079, nil, lockKinds}, {1630, AllFaults(), lockKinds}, {1904, AllFaults(), lockKinds}, {5548, AllFaults(), lockKinds},
		{622, AllFaults(), lockKinds}, {2400, AllFaults(), lockKinds}, {3779, AllFaults(), lockKinds}, {202, AllFaults(), nil},
		{26, nil, nil}, {69, nil, nil}, {83, AllFaults(), nil}, {551, AllFaults(), nil}, {144, nil, nil}, {569, nil, nil}, {1923, nil, nil}, {1144, nil, nil}} {
		res, err := Run(Options{Seed: c.seed, Faults: c.faults, Length: 10 * time.Second, Kinds: c.kinds,
			NoMultiLocks: true})
		require.NoError(t, err)
		for _, v := range res.Failed() {
			t.Errorf("seed %d: %s at %v on %s: %s", c.seed, v.Check, v.At, v.Name, v.What)
		}
	}
}

// RunSeeds with no seeds to run returns no results instead of panicking.
func TestRunSeedsWithNoSeeds(t *testing.T) {
	for _, n := range []int{0, -3} {
		results, errs := RunSeeds(Options{}, 1, n)
		require.Empty(t, results, "n = %d", n)
		require.Empty(t, errs, "n = %d", n)
	}
}

// TestPassivationRacesRequestsSentStraight: with an idle timeout short
// enough that key actors passivate between an owner's steps, and every
// fault, the workload's requests (sent straight to live key actors, as a
// Client's are) race the passivation handshake on the simulation's
// schedule; no check may find anything a fault does not excuse, and the
// race must have been run: passivations the engines refused because a
// request was sent after the actor asked.
func TestPassivationRacesRequestsSentStraight(t *testing.T) {
	var stopped, refused atomic.Uint64
	o := Options{Faults: AllFaults(), Length: 10 * time.Second, IdleTimeout: 30 * time.Millisecond, jobDelay: 40 * time.Millisecond,
		passivations: func(s, r uint64) { stopped.Add(s); refused.Add(r) }}
	for _, res := range runSeeds(t, o, 3000, 20) {
		for _, v := range res.Failed() {
			t.Errorf("seed %d: %s at %v on %s: %s", res.Seed, v.Check, v.At, v.Name, v.What)
		}
		assert.Empty(t, res.Unknown, "seed %d", res.Seed)
	}
	t.Logf("%d passivations, %d refused", stopped.Load(), refused.Load())
	assert.Positive(t, stopped.Load(), "key actors passivated")
	assert.Positive(t, refused.Load(), "a passivation met a request sent straight to its actor")
}
