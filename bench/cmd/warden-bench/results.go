package main

import "github.com/warden-go/warden/bench/internal/bench"

// results holds every run of every workload, by contender name where
// contenders take part.
type results struct {
	throughput  map[byte]map[string][]bench.Throughput // workloads a and b
	contention  map[string][]bench.Contention
	renewal     []bench.Renewal
	extend      []bench.ExtendRound
	waiters     []bench.Waiters
	passivation []bench.Passivation
	striped     []bench.Paired // workload g
	group       []bench.Paired // workload h
}

func newResults() *results {
	return &results{
		throughput: map[byte]map[string][]bench.Throughput{'a': {}, 'b': {}},
		contention: map[string][]bench.Contention{},
	}
}

// violations totals the mutual-exclusion violations of every run.
func (r *results) violations() int {
	n := 0
	for _, runs := range r.contention {
		for _, c := range runs {
			n += c.Violations
		}
	}
	for _, w := range r.waiters {
		n += w.Violations
	}
	return n
}

// median is the median over runs of f.
func median[T any](runs []T, f func(T) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	return bench.Median(v)
}

// ratioMedian is the median over runs of f(run of x) / f(run of base),
// pairing the runs by number: a library and warden in the same run ran
// back to back.
func ratioMedian[T any](x, base []T, f func(T) float64) float64 {
	var v []float64
	for i := range min(len(x), len(base)) {
		if b := f(base[i]); b != 0 {
			v = append(v, f(x[i])/b)
		}
	}
	return bench.Median(v)
}
