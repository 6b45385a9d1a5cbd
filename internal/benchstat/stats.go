// Package benchstat holds the statistics and measurement helpers that
// both benchmark programs (bench and bench/fullflavour) report with, so
// that a "median" or a "p99" means the same in RESULTS.md and
// FULL-FLAVOUR.md.
package benchstat

import (
	"math"
	"slices"
	"time"
)

// Number is what a sample can hold: durations, counts, KiB, ms.
type Number interface {
	~int | ~int64 | ~float64
}

// Median of xs (not modified): the middle value of a sorted copy, the
// mean of the two middle ones for an even count; 0 for no values.
func Median[T Number](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Quantile of xs (not modified) by nearest rank: the smallest value with
// at least q of the sample at or below it, q in [0,1]; 0 for no values.
// Nearest rank never interpolates, so a p99 is always a time that was
// actually measured.
func Quantile[T Number](xs []T, q float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	r := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(len(s)-1, r))]
}

// MS renders a duration in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ratio is a/b, NaN when either is missing (NaN) or b is 0, so a table
// shows "n/a" rather than an infinite factor.
func Ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}
