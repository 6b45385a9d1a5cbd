package cri

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

var (
	latencyN   = flag.Int("cri.n", 10, "RunPodSandbox calls per network in TestRunPodSandboxLatency")
	latencyOut = flag.String("cri.out", "", "write TestRunPodSandboxLatency's figures, as Markdown, to this file")
)

// hostLocalIPAM is the same bridge network with upstream host-local as its
// IPAM (10.<second>.0.0/16): the baseline of the latency comparison.
func hostLocalIPAM(second byte) string {
	return fmt.Sprintf(`{
  "type": "host-local",
  "ranges": [[{"subnet": "10.%[1]d.0.0/16", "rangeStart": "10.%[1]d.40.0", "rangeEnd": "10.%[1]d.40.255", "gateway": "10.%[1]d.0.1"}]],
  "routes": [{"dst": "0.0.0.0/0"}],
  "dataDir": %%q
}`, second)
}

// TestRunPodSandboxLatency times RunPodSandbox (the kubelet's whole pod
// network set-up: netns, bridge, veth, IPAM, loopback) through the chain
// ipam-delegated → ipam-ds-args → ipam-da-pools and through the same
// conflist with upstream host-local, on each containerd release, all four
// taking turns, and reports each release's ratio of medians. It asserts
// only that every pod starts and goes: timings belong to `make bench`,
// which runs it with -cri.n and -cri.out.
func TestRunPodSandboxLatency(t *testing.T) {
	needCRI(t)
	type subject struct {
		rel   *release
		label string
		c     *containerd
		times []time.Duration
	}
	var subjects []subject
	for i, r := range rels {
		hl := extraContainerd(t, r, network{name: "cnpcrih" + r.short, bridge: fmt.Sprintf("cnpcri%d", 3*i+2)}, hostLocalIPAM(byte(253-3*i)))
		subjects = append(subjects,
			subject{rel: r, label: "ipam-delegated → ipam-ds-args → ipam-da-pools", c: fileStack(r).c},
			subject{rel: r, label: "host-local", c: hl})
	}
	for i := range *latencyN {
		for k := range subjects {
			s := &subjects[(i+k)%len(subjects)]
			start := time.Now()
			p, err := s.c.runPod(context.Background(), "default", fmt.Sprintf("lat-%d", i), nil)
			d := time.Since(start)
			if err != nil {
				t.Fatalf("%s, %s: RunPodSandbox: %v", s.rel.label, s.label, err)
			}
			s.times = append(s.times, d)
			s.c.removePod(t, p)
		}
	}
	report := "| runtime | IPAM of the bridge conflist | RunPodSandbox median (ms) |\n| --- | --- | ---: |\n"
	var ratios []string
	for i := 0; i < len(subjects); i += 2 {
		chain, hl := benchstat.Median(subjects[i].times), benchstat.Median(subjects[i+1].times)
		report += fmt.Sprintf("| %s | %s | %.1f |\n| %s | %s | %.1f |\n", subjects[i].rel.label, subjects[i].label, ms(chain), subjects[i].rel.label, subjects[i+1].label, ms(hl))
		ratios = append(ratios, fmt.Sprintf("%s %.2f×", subjects[i].rel.label, float64(chain)/float64(hl)))
	}
	report += fmt.Sprintf("\nRatio of medians, chain / host-local: %s (n = %d each, the four taking turns, one private containerd per network).\n", strings.Join(ratios, ", "), *latencyN)
	t.Log("\n" + report)
	if *latencyOut != "" {
		head := "# RunPodSandbox through containerd's CRI\n\nWritten by `make bench` (`go test ./test/cri -run TestRunPodSandboxLatency -cri.n N -cri.out FILE`): the kubelet's RunPodSandbox against private containerd daemons " +
			"(Debian's 1.6 with Debian's plugins, reading the conflist's cniVersion 1.0.0; 2.x with upstream plugins v1.9.1, picking 1.1.0 from its cniVersions), bridge conflist, the chain against upstream host-local on each, pods started and removed one at a time, the four networks taking turns.\n\n"
		if err := os.WriteFile(*latencyOut, []byte(head+report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileStack is release r's stack with the file allocator.
func fileStack(r *release) *stack {
	for _, s := range stacks {
		if s.c.rel == r && strings.HasSuffix(s.name, "/file") {
			return s
		}
	}
	panic("no file stack for " + r.label)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
