package main

import (
	"strings"
	"testing"
	"time"
)

// TestHarnessSmall runs the whole harness on tiny numbers: it must build,
// install and exec everything, produce every table row, and find the
// concurrent ADDs distinct.
func TestHarnessSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and execs the real binary")
	}
	start := time.Now()
	// Concurrency on ours only: under load host-local's burst alone can
	// take 10 s, and its correctness is not ours to test.
	o := &options{n: 3, nLarge: 3, fills: []int{0, 100}, warmup: 1, concOps: 200, concWork: 32, concRounds: 1,
		concOnly: []string{kStandalone, kChain}, rssRuns: 1, initRuns: 1, hostLocal: upstreamHostLocal,
		tmpBase: t.TempDir(), log: tlog{t}}
	r, err := runBench(o)
	if err != nil {
		t.Fatal(err)
	}
	r.elapsed = time.Since(start)
	md := r.markdown()
	for _, row := range []string{
		"| 0 | ADD | 3 |", "| 0 | DEL | 3 |", "| 100 | ADD | 3 |", "| 100 | DEL | 3 |",
		"| ipam-da-pools |", "| chain |", "| host-local |", "| exec floor |",
		"| ipam-delegated |", "| ipam-ds-static |",
		"ipam-da-pools ADD, empty pool ≤ 1.25 × exec floor",
		"ipam-da-pools DEL, empty pool ≤ 1.25 × exec floor",
		"chain ADD, empty pool ≤ 1.05 × ipam-da-pools ADD",
		"ipam-da-pools ADD at 100 allocations ≤ 1.1 × empty",
		"CPU per ADD in the burst ≤ 1.2 × CPU per ADD alone",
		"| floor + packages |", "## What bounds ADD ÷ exec floor",
		"peak RSS of one ADD",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("RESULTS.md lacks %q", row)
		}
	}
	hostLocal := r.bins.hostLocal != ""
	for _, k := range []string{kStandalone, kChain} {
		c := r.conc[k]
		if c == nil {
			t.Errorf("%s: no concurrency result", k)
			continue
		}
		if !c.ok(o.concOps) {
			t.Errorf("%s: concurrent ADDs: %s", k, c.describe(o.concOps))
		}
	}
	if !strings.Contains(md, "## ipam-da-etcd against a 3-member etcd cluster") {
		t.Error("RESULTS.md lacks the ipam-da-etcd section")
	}
	if r.etcd != nil && r.etcd.skipped == "" {
		for _, row := range []string{"| ADD | ", "| DEL | ", "ADDs/s"} {
			if !strings.Contains(r.etcd.markdown(r.machine.nproc), row) {
				t.Errorf("ipam-da-etcd section lacks %q", row)
			}
		}
	}
	if msg := r.concurrencyFailure(); msg != "" {
		t.Errorf("concurrencyFailure: %s", msg)
	}
	if !hostLocal && !strings.Contains(md, "n/a") {
		t.Error("host-local missing but no n/a in the report")
	}
	if strings.Contains(md, "untrusted") {
		t.Errorf("the index was not trusted:\n%s", md)
	}
	svg := r.svg()
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<polyline") < 3 || !strings.Contains(svg, "log scale") {
		t.Errorf("chart looks wrong:\n%s", svg)
	}
	if testing.Verbose() {
		t.Log(md)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Logf("took %s (budget 20 s)", d)
	}
}

// tlog sends the harness's progress lines to the test log, with timings.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
