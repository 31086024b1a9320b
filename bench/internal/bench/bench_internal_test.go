package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, x := range n {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for name, tc := range map[string]struct {
		in   []time.Duration
		want Latency
	}{
		"none": {nil, Latency{}},
		"one":  {ms(7), Latency{N: 1, P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		"unsorted": {ms(5, 1, 4, 2, 3), Latency{N: 5, P50: 3 * time.Millisecond, P99: 5 * time.Millisecond,
			Max: 5 * time.Millisecond}},
		"hundred": {func() []time.Duration {
			d := make([]time.Duration, 100)
			for i := range d {
				d[i] = time.Duration(100-i) * time.Millisecond
			}
			return d
		}(), Latency{N: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, summarize(tc.in)) })
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tc.in...)
		assert.Equal(t, tc.want, Median(in), "%v", tc.in)
		assert.Equal(t, tc.in, in, "Median changed its input")
	}
}

func TestServerStatsSub(t *testing.T) {
	before := ServerStats{Calls: map[string]uint64{"evalsha": 10, "get": 5, "info": 3}, CPU: time.Second,
		Scripts: 40 * time.Microsecond}
	after := ServerStats{Calls: map[string]uint64{"evalsha": 14, "get": 5, "info": 9, "subscribe": 2, "pexpire": 4},
		CPU: 1500 * time.Millisecond, Scripts: 100 * time.Microsecond}
	d := after.Sub(before)
	assert.Equal(t, uint64(10), d.Calls, "info is the reading itself and does not count")
	assert.Equal(t, uint64(2), d.PubSub)
	assert.Equal(t, map[string]uint64{"evalsha": 4, "subscribe": 2, "pexpire": 4}, d.ByCommand)
	assert.Equal(t, 500*time.Millisecond, d.CPU)
	assert.Equal(t, 60*time.Microsecond, d.Scripts)
}

func TestBatches(t *testing.T) {
	var c Counter
	assert.Equal(t, Batches{Trips: []uint64{0}}, c.Batches(), "nothing counted")
	assert.Zero(t, c.Batches().Mean())
	assert.Zero(t, c.Batches().Percentile(0.5))
	assert.Zero(t, c.Batches().CallPercentile(0.5))
	assert.Zero(t, c.Batches().Max())
	assert.Zero(t, c.Batches().PipelinedShare())

	c.add(3) // three commands from a client that is not go-redis
	before := c.Batches()
	assert.Equal(t, Batches{Trips: []uint64{0}}, before, "no script call seen")
	for range 96 {
		c.trip(1, 1)
	}
	c.trip(2, 0) // a connection's CLIENT SETINFO pair: no script call
	c.trip(3, 1) // a pipeline of one script call and two other commands
	c.trip(4, 4)
	c.trip(4, 4)
	c.trip(2*MaxBatchCounted, 2*MaxBatchCounted)
	b := c.Batches().Sub(before)
	require.Len(t, b.Trips, MaxBatchCounted+1)
	assert.Equal(t, uint64(97), b.Trips[1])
	assert.Equal(t, uint64(2), b.Trips[4])
	assert.Equal(t, uint64(1), b.Trips[MaxBatchCounted], "a larger round trip counts as the largest told apart")
	assert.Equal(t, uint64(100), b.RoundTrips())
	assert.Equal(t, uint64(97+8+MaxBatchCounted), b.Cmds())
	assert.Equal(t, Sent{Cmds: 3 + 96 + 2 + 3 + 8 + 2*MaxBatchCounted, Trips: 3 + 96 + 5}, c.Read(), "Sent counts every command")
	assert.InDelta(t, float64(97+8+MaxBatchCounted)/100, b.Mean(), 1e-9)
	assert.Equal(t, 1, b.Percentile(0.50))
	assert.Equal(t, 1, b.Percentile(0.97))
	assert.Equal(t, 4, b.Percentile(0.98))
	assert.Equal(t, 4, b.Percentile(0.99))
	assert.Equal(t, MaxBatchCounted, b.Percentile(1))
	assert.Equal(t, MaxBatchCounted, b.Max())
	// 97 calls alone, 8 in batches of 4, 1024 in the largest: the median
	// call went in the largest.
	assert.Equal(t, 1, b.CallPercentile(97.0/float64(b.Cmds())))
	assert.Equal(t, 4, b.CallPercentile(98.0/float64(b.Cmds())))
	assert.Equal(t, 4, b.CallPercentile(105.0/float64(b.Cmds())))
	assert.Equal(t, MaxBatchCounted, b.CallPercentile(106.0/float64(b.Cmds())))
	assert.Equal(t, MaxBatchCounted, b.CallPercentile(0.5))
	assert.InDelta(t, float64(8+MaxBatchCounted)/float64(97+8+MaxBatchCounted), b.PipelinedShare(), 1e-9)

	none := c.Batches().Sub(c.Batches())
	assert.Zero(t, none.RoundTrips())
	assert.Zero(t, none.Max())
}
