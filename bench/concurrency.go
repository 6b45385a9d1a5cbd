package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// concRun is one burst of concurrent ADDs against one subject.
type concRun struct {
	wall     time.Duration
	distinct int // distinct addresses handed out
	total    int // addresses handed out
	failed   int // ADDs that exited non-zero
	firstErr string
	cpu      time.Duration // user+system of all the ADD processes
	latency  time.Duration // sum of every ADD's fork-to-reap time
}

// concResult is every burst of one subject.
type concResult struct {
	runs []concRun
}

func (c concResult) medianWall() time.Duration {
	ws := make([]time.Duration, len(c.runs))
	for i, r := range c.runs {
		ws[i] = r.wall
	}
	return benchstat.Median(ws)
}

// perOp is the median over bursts of f(burst) / ops.
func (c concResult) perOp(ops int, f func(concRun) time.Duration) time.Duration {
	xs := make([]time.Duration, len(c.runs))
	for i, r := range c.runs {
		xs[i] = f(r) / time.Duration(ops)
	}
	return benchstat.Median(xs)
}

func (c concResult) opsPerSec(ops int) float64 {
	w := c.medianWall()
	if w == 0 {
		return 0
	}
	return float64(ops) / w.Seconds()
}

// ok reports whether every burst handed out ops distinct addresses.
func (c concResult) ok(ops int) bool {
	for _, r := range c.runs {
		if r.failed > 0 || r.total != ops || r.distinct != ops {
			return false
		}
	}
	return len(c.runs) > 0
}

// measureConcurrency fires o.concOps ADDs of distinct containers from
// o.concWork workers, each ADD its own process, on an empty state
// directory, o.concRounds times per subject (subjects alternating), and
// checks that no two ADDs of a burst got the same address.
func measureConcurrency(o *options, subs []subject, r *results) {
	if o.concOnly != nil {
		subs = slices.DeleteFunc(slices.Clone(subs), func(s subject) bool { return !slices.Contains(o.concOnly, s.key) })
	}
	r.conc = map[string]*concResult{}
	for _, s := range subs {
		r.conc[s.key] = &concResult{}
	}
	for round := 0; round < o.concRounds; round++ {
		for j := range subs {
			s := subs[(round+j)%len(subs)]
			dataDir := filepath.Join(o.tmp, fmt.Sprintf("conc-%d-%s", round, s.key))
			run := burst(s, dataDir, o.concOps, o.concWork, round)
			r.conc[s.key].runs = append(r.conc[s.key].runs, run)
		}
	}
	for _, s := range subs {
		o.logf("concurrency: %-14s median wall %6.0f ms", s.label, benchstat.MS(r.conc[s.key].medianWall()))
	}
}

func burst(s subject, dataDir string, ops, workers, round int) concRun {
	outs := make([]outcome, ops)
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				outs[i] = run(s.call("ADD", containerID(fmt.Sprintf("conc-%d-%d-%s", round, i, s.key)), dataDir, nil))
			}
		}()
	}
	for i := 0; i < ops; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return tally(outs, time.Since(start))
}

// tally checks a burst's outcomes: failures, and how many distinct
// addresses the successful ADDs got.
func tally(outs []outcome, wall time.Duration) concRun {
	res := concRun{wall: wall}
	seen := map[string]bool{}
	for i, out := range outs {
		res.cpu += out.cpu
		res.latency += out.dur
		if out.exit != 0 {
			res.failed++
			if res.firstErr == "" {
				res.firstErr = fmt.Sprintf("ADD %d: exit %d: %s %s", i, out.exit, out.stdout, out.stderr)
			}
			continue
		}
		addrs, err := resultAddresses(out.stdout)
		if err != nil {
			res.failed++
			if res.firstErr == "" {
				res.firstErr = err.Error()
			}
			continue
		}
		for _, a := range addrs {
			res.total++
			seen[a] = true
		}
	}
	res.distinct = len(seen)
	return res
}
