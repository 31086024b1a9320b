package main

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/warden-go/warden/sim"
)

// seeds and replays are how many seeds the tests sweep: a few by default
// (go test, make test), 300 under make sim, which replays the first 120 (-args -seeds 300 -replays 120).
var (
	seeds    = flag.Int("seeds", 12, "how many seeds (from 1) the runner tests sweep")
	replays  = flag.Int("replays", 3, "how many seeds (from 1) the replay test runs twice")
	timeline = flag.String("timeline", "", "where to write the naive runner's first failing timeline (default: a temporary directory)")
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestNaiveRunnerIsCaught sweeps the seeds with process pauses: the naive
// runner must run a job twice in at least one of them. It prints the
// seeds and the first one's violation, and writes its timeline.
func TestNaiveRunnerIsCaught(t *testing.T) {
	caughtAt, res, _, err := caught(Options(false), 1, *seeds)
	require.NoError(t, err)
	require.NotEmpty(t, caughtAt, "the naive runner ran every job at most once in seeds 1..%d", *seeds)
	for _, v := range res.Failed() {
		assert.Equal(t, checkOnce, v.Check, "seed %d: %v", res.Seed, v)
	}
	path := *timeline
	if path == "" {
		path = filepath.Join(t.TempDir(), "naive.html")
	}
	require.NoError(t, res.WriteTimelineFile(path))
	t.Logf("naive runner caught at %d of %d seeds: %v; seed %d: %v (timeline %s)", len(caughtAt), *seeds, caughtAt,
		res.Seed, res.Failed()[0], path)
}

// TestFencedRunnerIsClean sweeps the same seeds: the fenced runner never
// runs a job twice, and no guarantee of warden's breaks but those the
// pauses excuse; package fence's guard, on the simulated Redis, refused
// the stale runners' reads and writes that would have.
func TestFencedRunnerIsClean(t *testing.T) {
	caughtAt, res, refused, err := caught(Options(true), 1, *seeds)
	require.NoError(t, err)
	if res != nil {
		path := filepath.Join(t.TempDir(), "fenced.html")
		require.NoError(t, res.WriteTimelineFile(path))
		t.Fatalf("the fenced runner failed at seeds %v; seed %d: %v (timeline %s)", caughtAt, res.Seed, res.Failed(),
			path)
	}
	require.Positive(t, refused, "the guard refused nothing in seeds 1..%d: the pauses never made a stale holder", *seeds)
	t.Logf("fenced runner clean in %d seeds; the guard refused %d stale reads and writes", *seeds, refused)
}

// TestReplayIsByteIdentical runs every seed of both runners twice, keeping
// the traces: each seed's trace must be the same bytes both times, and
// differ between seeds.
func TestReplayIsByteIdentical(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		o := Options(fenced)
		o.KeepTrace = true
		first, errs1 := sim.RunSeeds(o, 1, *replays)
		again, errs2 := sim.RunSeeds(o, 1, *replays)
		seen := map[string]int64{}
		for i := range first {
			require.NoError(t, errs1[i])
			require.NoError(t, errs2[i])
			a, b := first[i], again[i]
			require.NotEmpty(t, a.Events, "seed %d recorded no event", a.Seed)
			require.Equal(t, a.Lines, b.Lines, "fenced=%t seed %d replayed differently", fenced, a.Seed)
			require.Equal(t, a.Trace, b.Trace)
			require.Equal(t, a.Events, b.Events)
			if s, dup := seen[a.Trace]; dup {
				t.Fatalf("seeds %d and %d gave the same trace", s, a.Seed)
			}
			seen[a.Trace] = a.Seed
		}
	}
}
