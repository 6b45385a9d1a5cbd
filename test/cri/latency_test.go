package cri

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

var (
	latencyN   = flag.Int("cri.n", 10, "RunPodSandbox calls per network in TestRunPodSandboxLatency")
	latencyOut = flag.String("cri.out", "", "write TestRunPodSandboxLatency's figures, as Markdown, to this file")
)

// hostLocalIPAM is the same bridge network with upstream host-local as its
// IPAM: the baseline of the latency comparison.
const hostLocalIPAM = `{
  "type": "host-local",
  "ranges": [[{"subnet": "10.253.0.0/16", "rangeStart": "10.253.40.0", "rangeEnd": "10.253.40.255", "gateway": "10.253.0.1"}]],
  "routes": [{"dst": "0.0.0.0/0"}],
  "dataDir": %q
}`

// TestRunPodSandboxLatency times RunPodSandbox (the kubelet's whole pod
// network set-up: netns, bridge, veth, IPAM, loopback) through the chain
// ipam-delegated → ipam-ds-args → ipam-da-pools and through the same
// conflist with upstream host-local, alternating, and reports the ratio
// of medians. It asserts only that every pod starts and goes: timings
// belong to `make bench`, which runs it with -cri.n and -cri.out.
func TestRunPodSandboxLatency(t *testing.T) {
	needCRI(t)
	hl := extraContainerd(t, network{name: "cnpcrih", bridge: "cnpcri2"}, hostLocalIPAM)
	subjects := []struct {
		label string
		c     *containerd
		times []time.Duration
	}{{label: "ipam-delegated → ipam-ds-args → ipam-da-pools", c: stacks[0].c}, {label: "host-local", c: hl}}
	for i := range *latencyN {
		for k := range subjects {
			s := &subjects[(i+k)%len(subjects)]
			start := time.Now()
			p, err := s.c.runPod(context.Background(), "default", fmt.Sprintf("lat-%d", i), nil)
			d := time.Since(start)
			if err != nil {
				t.Fatalf("%s: RunPodSandbox: %v", s.label, err)
			}
			s.times = append(s.times, d)
			s.c.removePod(t, p)
		}
	}
	medians := make([]time.Duration, len(subjects))
	for i, s := range subjects {
		medians[i] = benchstat.Median(s.times)
	}
	ratio := float64(medians[0]) / float64(medians[1])
	report := fmt.Sprintf("| IPAM of the bridge conflist | RunPodSandbox median (ms) |\n| --- | ---: |\n| %s | %.1f |\n| %s | %.1f |\n\nRatio of medians: %.2f× (n = %d each, alternating, one private containerd per network).\n",
		subjects[0].label, ms(medians[0]), subjects[1].label, ms(medians[1]), ratio, *latencyN)
	t.Log("\n" + report)
	if *latencyOut != "" {
		head := "# RunPodSandbox through containerd's CRI\n\nWritten by `make bench` (`go test ./test/cri -run TestRunPodSandboxLatency -cri.n N -cri.out FILE`): the kubelet's RunPodSandbox against a private containerd " +
			"(Debian's 1.6), bridge conflist, the chain against upstream host-local, pods started and removed one at a time, the two networks alternating.\n\n"
		if err := os.WriteFile(*latencyOut, []byte(head+report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
