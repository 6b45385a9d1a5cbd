package main

import (
	"math"
	"slices"
	"time"
)

// summary is what the tables show of a sample.
type summary struct {
	n           int
	median, p99 time.Duration
}

// summarise takes the median and the nearest-rank 99th percentile.
func summarise(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return summary{n: len(s), median: medianSorted(s), p99: s[rank(len(s), 0.99)]}
}

func medianSorted[T int64 | time.Duration | float64](s []T) T {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// median of any sample (not modified).
func median[T int64 | time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return medianSorted(s)
}

// rank is the 0-based index of the nearest-rank q-quantile of n values.
func rank(n int, q float64) int {
	r := int(math.Ceil(q*float64(n))) - 1
	return max(0, min(n-1, r))
}

// ms renders a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratio is a/b, NaN when b is missing.
func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
