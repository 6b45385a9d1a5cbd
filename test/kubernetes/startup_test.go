package kubernetes

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/testkit/kubenode"
)

var (
	startupPods   = flag.Int("k8s.pods", 10, "pods of the Deployment PodStartup scales from 0")
	startupRounds = flag.Int("k8s.rounds", 1, "rounds of PodStartup, each timing both networks")
	startupOut    = flag.String("k8s.out", "", "write PodStartup's figures, as Markdown, to this file")
)

// hostLocalConflist is the baseline: the same bridge plugin with upstream
// host-local, on a bridge and subnet of its own. Named to sort before the
// installed conflist, it is the network the runtime loads while it is in
// net.d (containerd loads the first file by name and follows changes).
const hostLocalConflist = `{
  "cniVersion": "1.0.0",
  "name": "k8s-hostlocal",
  "plugins": [
    {
      "type": "bridge", "bridge": %[2]q, "isGateway": true, "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "10.241.0.0/16", "rangeStart": "10.241.1.0", "rangeEnd": "10.241.4.255", "gateway": "10.241.0.1" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": %[1]q
      }
    },
    { "type": "loopback" }
  ]
}`

const hostLocalBridge = "cnpk8s1"

// podStartup times a Deployment from 0 to -k8s.pods ready pods, through
// the installed chain (ipam-delegated → ipam-ds-args → ipam-da-pools) and
// through bridge + upstream host-local, the two taking turns each round.
// It asserts only that every pod starts and goes: timings belong to
// `make bench`, which runs it with -k8s.pods 100 and -k8s.out.
func podStartup(t *testing.T, c *cluster) {
	c.Links = append(c.Links, hostLocalBridge)
	hl := filepath.Join(c.NetDir, "00-k8s-hostlocal.conflist")
	conf := fmt.Sprintf(hostLocalConflist, filepath.Join(c.Root, "host-local"), hostLocalBridge)
	t.Cleanup(func() { _ = os.Remove(hl) })
	c.namespace(t, "startup")
	times := map[string][]time.Duration{}
	subjects := []string{"ipam-delegated → ipam-ds-args → ipam-da-pools", "host-local"}
	for round := range *startupRounds {
		for k := range subjects {
			s := subjects[(round+k)%len(subjects)]
			if s == "host-local" {
				if err := os.WriteFile(hl, []byte(conf), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				_ = os.Remove(hl)
			}
			// containerd follows net.d with a file watch; give it a moment.
			time.Sleep(2 * time.Second)
			start := time.Now()
			c.deployment(t, "startup", "burst", *startupPods)
			wait(t, 10*time.Minute, fmt.Sprintf("%d pods through %s", *startupPods, s), c.allReady(t, "startup", *startupPods))
			times[s] = append(times[s], time.Since(start))
			for _, e := range c.events(t, "startup", "FailedCreatePodSandBox") {
				t.Errorf("%s: a sandbox failed: %s", s, e.Message)
			}
			for _, p := range c.pods(t, "startup") {
				if got, want := strings.HasPrefix(p.Status.PodIP, "10.241."), s == "host-local"; got != want {
					t.Fatalf("%s: pod %s has %s", s, p.Name, p.Status.PodIP)
				}
			}
			c.kubectl(t, "-n", "startup", "delete", "deployment", "burst", "--wait=true")
			wait(t, 5*time.Minute, "the burst's pods gone", c.allReady(t, "startup", 0))
		}
	}
	_ = os.Remove(hl)
	chain, base := benchstat.Median(times[subjects[0]]), benchstat.Median(times[subjects[1]])
	report := fmt.Sprintf("| IPAM of the bridge conflist | 0 → %d ready pods, median (s) |\n| --- | ---: |\n| %s | %.1f |\n| %s | %.1f |\n\nRatio of medians, chain / host-local: %.2f× (%d rounds, the two taking turns).\n",
		*startupPods, subjects[0], chain.Seconds(), subjects[1], base.Seconds(), float64(chain)/float64(base), *startupRounds)
	t.Log("\n" + report)
	if *startupOut != "" {
		head := fmt.Sprintf("# 0 → %d pods on a Kubernetes node\n\nWritten by `make bench` (`go test ./test/kubernetes -run 'TestKubernetesNode/(NotReadyUntilInstalled|PodStartup)' -k8s.pods N -k8s.rounds R -k8s.out FILE`): a single-node Kubernetes %s (kubelet, API server, scheduler, controller manager) over containerd 2.4.2, cniplugins installed by its DaemonSet; a Deployment scaled from 0 to N pods, timed from `kubectl apply` until every pod is Ready, through the installed conflist and through the same bridge with upstream host-local v1.9.1.\n\n", *startupPods, kubenode.KubernetesVersion)
		if err := os.WriteFile(*startupOut, []byte(head+report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
