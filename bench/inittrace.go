package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// labelFloorLinked is the floor that also links (and initialises) every
// package of the lean binary.
const labelFloorLinked = "floor + packages"

// startupSubject is one executable whose start-up is measured.
type startupSubject struct {
	label, path, cniPath string
}

// startup is what GODEBUG=inittrace=1 says about one executable, over
// several runs, plus the wall time of a plain VERSION.
type startup struct {
	label    string
	runs     int
	initSum  []float64            // ms of init clock per run
	initByPk map[string][]float64 // ms per package per run
	initPkgs []int                // packages initialised per run
	version  []time.Duration      // VERSION wall time, no GODEBUG
}

type pkgCost struct {
	pkg string
	ms  float64
}

// top returns the n packages with the largest median init clock.
func (s *startup) top(n int) []pkgCost {
	var out []pkgCost
	for pkg, xs := range s.initByPk {
		// A package missing from some runs counts as 0 in them.
		all := append(slices.Clone(xs), make([]float64, max(0, s.runs-len(xs)))...)
		out = append(out, pkgCost{pkg, benchstat.Median(all)})
	}
	slices.SortFunc(out, func(a, b pkgCost) int {
		if a.ms != b.ms {
			if a.ms > b.ms {
				return -1
			}
			return 1
		}
		if a.pkg < b.pkg {
			return -1
		}
		return 1
	})
	return out[:min(n, len(out))]
}

func startupSubjects(b *binaries) []startupSubject {
	var out []startupSubject
	for _, p := range []string{"ipam-delegated", "ipam-ds-static", "ipam-ds-args", "ipam-da-pools"} {
		out = append(out, startupSubject{label: p, path: filepath.Join(b.cniDir, p), cniPath: b.cniDir})
	}
	if b.hostLocal != "" {
		out = append(out, startupSubject{label: "host-local", path: b.hostLocal, cniPath: filepath.Dir(b.hostLocal)})
	}
	return append(out,
		startupSubject{label: "exec floor", path: b.floor, cniPath: filepath.Dir(b.floor)},
		startupSubject{label: labelFloorLinked, path: b.floorLinked, cniPath: filepath.Dir(b.floorLinked)})
}

// measureStartup runs VERSION (package initialisation does not depend on
// the command, and VERSION does nothing else and runs no delegates, so
// the trace is one process's) with GODEBUG=inittrace=1, and without it
// for the wall time, o.initRuns times per subject, subjects alternating.
func measureStartup(o *options, subs []startupSubject, r *results) error {
	conf := []byte(`{"cniVersion":"1.0.0","name":"net","ipam":{"type":"x"}}`)
	res := make([]*startup, len(subs))
	for i, s := range subs {
		res[i] = &startup{label: s.label, initByPk: map[string][]float64{}}
	}
	for run := 0; run < o.initRuns; run++ {
		for j := range subs {
			k := (run + j) % len(subs)
			s, st := subs[k], res[k]
			c := call{path: s.path, command: "VERSION", cid: "", ifname: ifname, cniPath: s.cniPath, stdin: conf}
			plain, err := mustRun(c)
			if err != nil {
				return err
			}
			c.env = []string{"GODEBUG=inittrace=1"}
			traced, err := mustRun(c)
			if err != nil {
				return err
			}
			sum, byPkg := benchstat.ParseInittrace(traced.stderr)
			if len(byPkg) == 0 {
				return fmt.Errorf("%s: no inittrace lines on stderr: %s", s.label, traced.stderr)
			}
			st.runs++
			st.version = append(st.version, plain.dur)
			st.initSum = append(st.initSum, sum)
			st.initPkgs = append(st.initPkgs, len(byPkg))
			for p, v := range byPkg {
				st.initByPk[p] = append(st.initByPk[p], v)
			}
		}
	}
	r.startup = res
	return nil
}
