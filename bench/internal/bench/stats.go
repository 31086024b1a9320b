package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarises a set of durations.
type Latency struct {
	N             int
	P50, P99, Max time.Duration
}

// summarize returns the nearest-rank p50, p99 and max of d, which it sorts.
func summarize(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	return Latency{N: len(d), P50: rank(d, 0.50), P99: rank(d, 0.99), Max: d[len(d)-1]}
}

// rank is the nearest-rank percentile p of sorted d.
func rank(d []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// Median returns the median of v (the mean of the middle two of an even
// count), 0 for none. It does not change v.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
