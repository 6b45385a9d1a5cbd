package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

// sideBySide is one host's ADD and DEL latency, this build and another
// (main's), alternating in one run against the same cluster.
type sideBySide struct {
	n             int
	other         string
	this, against map[string][]time.Duration // "ADD", "DEL"
	thisF, otherF int                        // failures
}

// compare alternates ADD then DEL (with prevResult) of a new container,
// this build then the other, each on a node and prefix of its own, so
// that each build's DEL is followed by its next ADD as on a busy host.
func compare(cl *etcdtest.Cluster, thisDir, otherDir, tmp string, n int) (*sideBySide, error) {
	out := &sideBySide{n: n, other: otherDir, this: map[string][]time.Duration{}, against: map[string][]time.Duration{}}
	mk := func(dir, name string) (*fleet, *host, error) {
		f := newFleet(&options{}, cl, dir, tmp)
		f.prefix = "/compare-" + name + "/"
		h := &host{name: "cmp-" + name, ctx: context.Background(), live: map[string]bool{}, inFlight: map[string]bool{}, deleting: map[string]bool{}}
		h.idFile = filepath.Join(tmp, h.name+".machine-id")
		f.start = time.Now()
		return f, h, os.WriteFile(h.idFile, []byte(fmt.Sprintf("%032x\n", len(name))), 0o600)
	}
	fThis, hThis, err := mk(thisDir, "this")
	if err != nil {
		return nil, err
	}
	fOther, hOther, err := mk(otherDir, "other")
	if err != nil {
		return nil, err
	}
	for i := -3; i < n; i++ { // 3 untimed rounds: registration, warm page cache
		for _, side := range []struct {
			f    *fleet
			h    *host
			into map[string][]time.Duration
			fail *int
		}{{fThis, hThis, out.this, &out.thisF}, {fOther, hOther, out.against, &out.otherF}} {
			cid := fmt.Sprintf("cmp-%d", i+3)
			start := time.Now()
			res, code, err := side.f.exec(context.Background(), side.h, "ADD", cid, nil)
			add := time.Since(start)
			if err != nil || code != 0 {
				*side.fail++
				continue
			}
			start = time.Now()
			_, code, err = side.f.exec(context.Background(), side.h, "DEL", cid, res)
			del := time.Since(start)
			if err != nil || code != 0 {
				*side.fail++
				continue
			}
			if i >= 0 {
				side.into["ADD"] = append(side.into["ADD"], add)
				side.into["DEL"] = append(side.into["DEL"], del)
			}
		}
	}
	return out, nil
}

func (c *sideBySide) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## One host's ADD and DEL, side by side with another build\n\n")
	fmt.Fprintf(&b, "n = %d each, alternating (ADD then DEL with prevResult of a new container, this build then `%s`), one node and prefix each, same cluster, after the fleet run. Median / p99 ms, as the runtime sees it (fork+exec to reaped).\n\n", c.n, c.other)
	fmt.Fprintf(&b, "| op | this build | other build | ratio of medians |\n| --- | ---: | ---: | ---: |\n")
	for _, op := range []string{"ADD", "DEL"} {
		a, o := c.this[op], c.against[op]
		if len(a) == 0 || len(o) == 0 {
			continue
		}
		ma, mo := benchstat.Median(a), benchstat.Median(o)
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s | %.2f× |\n", op, ms(ma), ms(benchstat.Quantile(a, 0.99)), ms(mo), ms(benchstat.Quantile(o, 0.99)), float64(ma)/float64(mo))
	}
	fmt.Fprintf(&b, "\nFailures: this build %d, other %d.\n", c.thisF, c.otherF)
	return b.String()
}
