package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/dapools"
)

// Operations timed by the latency scenario.
var latencyOps = []string{"ADD", "DEL"}

// sideBySide is what alternate measures: the durations of each
// "<variant> <op>".
type sideBySide map[string][]time.Duration

// cell is variant's median / p99 of op in ms, for a table.
func (s sideBySide) cell(variant, op string) string {
	m := summarise(s[variant+" "+op])
	return num(benchstat.MS(m.median)) + " / " + num(benchstat.MS(m.p99))
}

// ratio is variant's median of op over base's.
func (s sideBySide) ratio(variant, base, op string) float64 {
	on, off := summarise(s[variant+" "+op]), summarise(s[base+" "+op])
	return benchstat.Ratio(benchstat.MS(on.median), benchstat.MS(off.median))
}

// metCell is a target's table cell (a NaN ratio, not measured, is not met).
func metCell(met bool) string {
	if met {
		return "**met**"
	}
	return "**not met**"
}

// alternate times the ADD and DEL of pair for variants taking turns, as
// the side-by-side scenarios do: warm rounds first (not recorded), then n
// rounds, each starting one variant further on so that none always goes
// first. tag is "warm" or "lat", i the round; samples gets
// "<variant> ADD" and "<variant> DEL".
func alternate(variants []string, warm, n int, samples sideBySide, pair func(variant string, i int, tag string) ([2]outcome, error)) error {
	for w := 0; w < warm; w++ {
		for _, v := range variants {
			if _, err := pair(v, w, "warm"); err != nil {
				return err
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := range variants {
			v := variants[(i+j)%len(variants)]
			ds, err := pair(v, i, "lat")
			if err != nil {
				return err
			}
			for k, op := range latencyOps {
				samples[v+" "+op] = append(samples[v+" "+op], ds[k].dur)
			}
		}
	}
	return nil
}

type latencyKey struct {
	fill    int
	op      string
	subject string
}

// latency holds every ADD and DEL timing, by fill level, op and subject.
type latency struct {
	fills   []int
	iters   map[int]int
	samples map[latencyKey][]time.Duration
	// first is the first (untimed) ADD on each freshly pre-filled
	// directory: for ours it includes rebuilding the index.
	first map[latencyKey]time.Duration
	// cpu is the user+system time of each timed operation (for the
	// chain, including delegates it exec'd and waited for).
	cpu map[latencyKey][]time.Duration
}

func (l *latency) summary(fill int, op, subject string) summary {
	return summarise(l.samples[latencyKey{fill, op, subject}])
}

// measureLatency pre-fills one state directory per fill level and
// subject (each subject its own copy, so that one's writes never
// invalidate another's cached view), warms them, then runs the timed
// iterations: each visits every (fill level, subject) pair in a rotating
// order and ADDs then DELs a fresh container there, so that machine noise
// and drift land on every level and subject alike and the ratios between
// fill levels mean something on a shared machine. Levels with fewer
// iterations (60k) are visited on evenly spread iterations. The fill
// stays constant because every ADD is undone by its DEL.
func measureLatency(o *options, subs []subject, formats map[string]format, r *results) error {
	l := &latency{fills: o.fills, iters: map[int]int{}, samples: map[latencyKey][]time.Duration{},
		first: map[latencyKey]time.Duration{}, cpu: map[latencyKey][]time.Duration{}}
	r.latency = l
	mst := newMasters(filepath.Join(o.tmp, "masters"))
	dataDir := func(fill int, s subject) string {
		return filepath.Join(o.tmp, fmt.Sprintf("fill-%d", fill), s.key)
	}
	for _, fill := range o.fills {
		start := time.Now()
		for _, s := range subs {
			if dir := s.stateDir(dataDir(fill, s)); dir != "" {
				if err := mst.prefill(dir, fill, formats[s.key]); err != nil {
					return fmt.Errorf("pre-filling %s with %d: %v", s.label, fill, err)
				}
			}
		}
		syscall.Sync()
		filled := time.Now()
		// Untimed: the first operation of ours on a directory someone
		// else filled rebuilds the index; the rest warm the page cache.
		// The first ADD's time is kept for the report.
		for w := 0; w < max(1, o.warmup); w++ {
			for _, s := range subs {
				ds, err := addDel(s, dataDir(fill, s), fmt.Sprintf("warm-%d-%d", fill, w))
				if err != nil {
					return err
				}
				if w == 0 {
					l.first[latencyKey{fill, "ADD", s.key}] = ds[0].dur
				}
			}
		}
		syscall.Sync()
		checkStamps(dataDir(fill, byKey(subs, kStandalone)), fill, r)
		checkStamps(dataDir(fill, byKey(subs, kChain)), fill, r)
		l.iters[fill] = o.itersFor(fill)
		o.logf("latency: fill %d: pre-fill %.1fs, warm-up (includes our index rebuild) %.1fs", fill,
			filled.Sub(start).Seconds(), time.Since(filled).Seconds())
	}
	type slot struct {
		fill int
		s    subject
	}
	start := time.Now()
	for i := 0; i < o.n; i++ {
		var slots []slot
		for _, fill := range o.fills {
			if k := l.iters[fill]; (i+1)*k/o.n > i*k/o.n { // k of the n iterations, evenly spread
				for _, s := range subs {
					slots = append(slots, slot{fill, s})
				}
			}
		}
		for j := range slots {
			sl := slots[(i+j)%len(slots)]
			ds, err := addDel(sl.s, dataDir(sl.fill, sl.s), fmt.Sprintf("lat-%d-%d", sl.fill, i))
			if err != nil {
				return err
			}
			for k, op := range latencyOps {
				key := latencyKey{sl.fill, op, sl.s.key}
				l.samples[key] = append(l.samples[key], ds[k].dur)
				l.cpu[key] = append(l.cpu[key], ds[k].cpu)
			}
		}
	}
	o.logf("latency: %d iterations over every fill level and subject, %.1fs", o.n, time.Since(start).Seconds())
	for _, fill := range o.fills {
		for _, s := range subs {
			if dir := s.stateDir(dataDir(fill, s)); dir != "" {
				got, err := countReservations(dir)
				if err != nil {
					return err
				}
				if got != fill {
					return fmt.Errorf("%s: %d reservations after the fill-%d iterations, want %d (a DEL did not release?)", s.label, got, fill, fill)
				}
			}
		}
	}
	return nil
}

// addDel ADDs a fresh container, then DELs it with the ADD's result as
// prevResult (as runtimes do), and returns the two outcomes.
func addDel(s subject, dataDir, tag string) ([2]outcome, error) {
	cid := containerID(tag + "-" + s.key)
	a, err := mustRun(s.call("ADD", cid, dataDir, nil))
	if err != nil {
		return [2]outcome{}, err
	}
	d, err := mustRun(s.call("DEL", cid, dataDir, a.stdout))
	if err != nil {
		return [2]outcome{}, err
	}
	return [2]outcome{a, d}, nil
}

// checkStamps notes when our index could not be trusted after the warm-up
// (every operation would then scan the directory, as host-local does).
func checkStamps(dataDir string, fill int, r *results) {
	var found []string
	for _, dir := range []string{dataDir, dapools.PoolsDir(dataDir)} {
		m, _ := filepath.Glob(filepath.Join(dir, "_index", "*", "stamp"))
		found = append(found, m...)
	}
	if len(found) == 0 {
		r.note(fmt.Sprintf("fill %d: no index stamp found under %s (index layout changed?)", fill, filepath.Base(dataDir)))
		return
	}
	for _, p := range found {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "untrusted") {
			r.note(fmt.Sprintf("WARNING fill %d: index stamp %s says untrusted: every operation scans the state directory", fill, strings.TrimPrefix(p, dataDir)))
		}
	}
}
