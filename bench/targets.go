package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// verdict of one target line.
type verdict string

const (
	pass verdict = "PASS"
	fail verdict = "FAIL"
	na   verdict = "n/a"
)

// targetLine is one evaluated target.
type targetLine struct {
	what, measured string
	v              verdict
}

func judge(r, limit float64, atMost bool) verdict {
	switch {
	case math.IsNaN(r):
		return na
	case atMost && r <= limit, !atMost && r >= limit:
		return pass
	}
	return fail
}

// medMS is the median of op at fill for subject, in ms (NaN if absent).
func (r *results) medMS(fill int, op, subject string) float64 {
	if r.latency == nil {
		return math.NaN()
	}
	s := r.latency.summary(fill, op, subject)
	if s.n == 0 {
		return math.NaN()
	}
	return benchstat.MS(s.median)
}

// targets evaluates the project's performance targets from this run's
// ratios of medians.
func (r *results) targets() []targetLine {
	var out []targetLine
	cmp := func(what string, a, b float64, bName, unit string, limit float64, atMost bool) {
		x := benchstat.Ratio(a, b)
		m := fmt.Sprintf("%s %s / %s %s = %s", num(a), unit, num(b), unit, fmtRatio(x))
		if math.IsNaN(b) {
			m = fmt.Sprintf("%s %s; %s n/a", num(a), unit, bName)
		}
		out = append(out, targetLine{what, m, judge(x, limit, atMost)})
	}
	for _, op := range latencyOps {
		cmp(fmt.Sprintf("ipam-da-pools %s, empty pool ≤ 1.25 × exec floor", op), r.medMS(0, op, kStandalone), r.medMS(0, op, kFloor), "floor", "ms", 1.25, true)
	}
	cmp("chain ADD, empty pool ≤ 1.05 × ipam-da-pools ADD", r.medMS(0, "ADD", kChain), r.medMS(0, "ADD", kStandalone), "ipam-da-pools", "ms", 1.05, true)
	largest := r.opts.fills[len(r.opts.fills)-1]
	for _, k := range []string{kStandalone, kChain} {
		for _, op := range latencyOps {
			what := fmt.Sprintf("%s %s at %s allocations ≤ 1.1 × empty", labelOf(k), op, fillLabel(largest))
			if largest == 0 {
				out = append(out, targetLine{what, "only the empty pool was measured", na})
				continue
			}
			cmp(what, r.medMS(largest, op, k), r.medMS(0, op, k), "empty", "ms", 1.1, true)
		}
	}
	// Concurrency: the ratio, and zero duplicates whatever the ratio.
	ops := r.opts.concOps
	what := fmt.Sprintf("%d concurrent ADDs (%d workers): ipam-da-pools ≥ 2 × host-local's ops/s, zero duplicates", ops, r.opts.concWork)
	if c := r.conc[kStandalone]; c != nil {
		x := math.NaN()
		m := fmt.Sprintf("%.0f ops/s", c.opsPerSec(ops))
		if h := r.conc[kHostLocal]; h != nil {
			x = benchstat.Ratio(c.opsPerSec(ops), h.opsPerSec(ops))
			m += fmt.Sprintf(" / %.0f ops/s = %s", h.opsPerSec(ops), fmtRatio(x))
		} else {
			m += "; host-local n/a"
		}
		v := judge(x, 2, false)
		if !c.ok(ops) {
			v = fail
			m += "; DUPLICATES OR FAILURES: " + c.describe(ops)
		} else {
			m += "; no duplicates"
		}
		out = append(out, targetLine{what, m, v})
	}
	// CPU per ADD in the burst against CPU per ADD alone (empty pool).
	if c := r.conc[kStandalone]; c != nil && r.latency != nil {
		burst := benchstat.MS(c.perOp(ops, func(run concRun) time.Duration { return run.cpu }))
		alone := math.NaN()
		if xs := r.latency.cpu[latencyKey{0, "ADD", kStandalone}]; len(xs) > 0 {
			alone = benchstat.MS(benchstat.Median(xs))
		}
		cmp("ipam-da-pools CPU per ADD in the burst ≤ 1.2 × CPU per ADD alone", burst, alone, "alone", "ms", 1.2, true)
	}
	// Peak RSS.
	what = "peak RSS of one ADD (VmHWM): ipam-da-pools ≤ host-local's"
	if s := r.rss[kStandalone]; s != nil {
		a, b := float64(s.medianHWM()), math.NaN()
		if h := r.rss[kHostLocal]; h != nil {
			b = float64(h.medianHWM())
		}
		cmp(what, a, b, "host-local", "KiB", 1, true)
	}
	return out
}

func labelOf(key string) string {
	if key == kStandalone {
		return "ipam-da-pools"
	}
	return key
}

func (c concResult) describe(ops int) string {
	var parts []string
	for i, r := range c.runs {
		parts = append(parts, fmt.Sprintf("round %d: %d/%d distinct of %d ADDs, %d failed %s", i+1, r.distinct, r.total, ops, r.failed, r.firstErr))
	}
	return strings.Join(parts, "; ")
}

// concurrencyFailure is non-empty when a plugin handed out an address
// twice (or failed) in a concurrent burst: the harness then exits 1.
func (r *results) concurrencyFailure() string {
	var msgs []string
	for _, s := range r.subs {
		c := r.conc[s.key]
		if s.key == kFloor || c == nil || c.ok(r.opts.concOps) {
			continue
		}
		msgs = append(msgs, s.label+": "+c.describe(r.opts.concOps))
	}
	if msg := r.etcd.failure(); msg != "" {
		msgs = append(msgs, msg)
	}
	return strings.Join(msgs, "\n")
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", x)
}

func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func fillLabel(f int) string {
	switch {
	case f >= 1000 && f%1000 == 0:
		return fmt.Sprintf("%dk", f/1000)
	}
	return fmt.Sprint(f)
}
