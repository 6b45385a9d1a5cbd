package main

import (
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// summary is what the tables show of a sample.
type summary struct {
	n           int
	median, p99 time.Duration
}

// summarise takes the median and the nearest-rank 99th percentile.
func summarise(ds []time.Duration) summary {
	return summary{n: len(ds), median: benchstat.Median(ds), p99: benchstat.Quantile(ds, 0.99)}
}
