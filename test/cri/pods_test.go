package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podSeq makes every pod's UID unique in the package.
var podSeq atomic.Int64

type pod struct {
	id, namespace, name string
	ip                  netip.Addr
}

// runPod is the kubelet's RunPodSandbox for a pod of namespace/name with
// the given annotations; it returns the sandbox and its address as
// PodSandboxStatus reports it, or RunPodSandbox's error.
func runPod(ctx context.Context, namespace, name string, annotations map[string]string) (pod, error) {
	return ctd.runPod(ctx, namespace, name, annotations)
}

func (c *containerd) runPod(ctx context.Context, namespace, name string, annotations map[string]string) (pod, error) {
	uid := fmt.Sprintf("uid-%d-%d", os.Getpid(), podSeq.Add(1))
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid},
		Hostname:     name,
		LogDirectory: "",
		Annotations:  annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return pod{}, err
	}
	p := pod{id: resp.PodSandboxId, namespace: namespace, name: name}
	st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.id})
	if err != nil {
		return p, fmt.Errorf("PodSandboxStatus %s: %w", p.id, err)
	}
	if st.Status.Network != nil {
		p.ip, _ = netip.ParseAddr(st.Status.Network.Ip)
	}
	return p, nil
}

func mustRunPod(t *testing.T, namespace, name string, annotations map[string]string) pod {
	t.Helper()
	return ctd.mustRunPod(t, namespace, name, annotations)
}

func (c *containerd) mustRunPod(t *testing.T, namespace, name string, annotations map[string]string) pod {
	t.Helper()
	p, err := c.runPod(context.Background(), namespace, name, annotations)
	if err != nil {
		t.Fatalf("RunPodSandbox %s/%s: %v", namespace, name, err)
	}
	t.Cleanup(func() { c.removePod(t, p) })
	if !p.ip.IsValid() {
		t.Fatalf("pod %s/%s: PodSandboxStatus shows no address", namespace, name)
	}
	return p
}

// removePod is what the kubelet does when a pod goes: StopPodSandbox (CNI
// DEL with the netns and prevResult), then RemovePodSandbox (a second DEL,
// CNI_NETNS="" and no prevResult). Both must succeed; a second removal of
// the same pod is a no-op.
func removePod(t *testing.T, p pod) { t.Helper(); ctd.removePod(t, p) }

func (c *containerd) removePod(t *testing.T, p pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Errorf("StopPodSandbox %s/%s: %v", p.namespace, p.name, err)
	}
	if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Errorf("RemovePodSandbox %s/%s: %v", p.namespace, p.name, err)
	}
}

// lease is one reservation as `cniplugins leases -o json` reports it.
type lease struct {
	Address     string `json:"address"`
	Network     string `json:"network"`
	Pool        string `json:"pool"`
	ContainerID string `json:"containerID"`
	Owner       string `json:"owner"`
}

// leases is the operator's view of the state directory.
func leases(t *testing.T, dataDir string) []lease {
	t.Helper()
	if _, err := os.Stat(dataDir); os.IsNotExist(err) {
		return nil // no ADD has run yet
	}
	cmd := exec.Command(filepath.Join(binDir, "cniplugins"), "leases", "--data-dir", dataDir, "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cniplugins leases --data-dir %s: %v: %s", dataDir, err, stderr.String())
	}
	var ls []lease
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatalf("leases -o json: %v: %s", err, out)
	}
	return ls
}

// leaseOf finds the reservation of sandbox id.
func leaseOf(ls []lease, id string) (lease, bool) {
	for _, l := range ls {
		if l.ContainerID == id {
			return l, true
		}
	}
	return lease{}, false
}

// network writes one conflist into containerd's conf dir: bridge with
// ipam-delegated → ipam-ds-args → ipam-da-pools and the pod-annotations
// capability, as in the README's Kubernetes example. containerd 1.6 loads
// one network (the first file by name) and reloads on change.
type network struct {
	name, bridge, dataDir string
}

const tenantsIPAM = `{
  "type": "ipam-delegated",
  "delegates": ["ipam-ds-args", "ipam-da-pools"],
  "rules": [
    {"namespace": "team-a", "pools": ["team-a"], "podChoice": ["team-a", "team-a-batch"]},
    {"namespace": "team-b", "pools": ["team-b"]}
  ],
  "defaultPools": ["others"],
  "poolDefinitions": {
    "team-a":       [{"subnet": "10.251.0.0/16", "rangeStart": "10.251.10.0", "rangeEnd": "10.251.10.255", "gateway": "10.251.0.1"}],
    "team-a-batch": [{"subnet": "10.251.0.0/16", "rangeStart": "10.251.11.0", "rangeEnd": "10.251.11.255", "gateway": "10.251.0.1"}],
    "team-b":       [{"subnet": "10.251.0.0/16", "rangeStart": "10.251.20.0", "rangeEnd": "10.251.20.255", "gateway": "10.251.0.1"}],
    "others":       [{"subnet": "10.251.0.0/16", "rangeStart": "10.251.40.0", "rangeEnd": "10.251.40.255", "gateway": "10.251.0.1"}]
  },
  "routes": [{"dst": "0.0.0.0/0"}],
  "dataDir": %q
}`

// writeNetwork writes n's conflist into confDir before containerd starts,
// so its CRI plugin loads it at start-up. ipam is the bridge's ipam
// section, a format string taking the data dir.
func writeNetwork(confDir string, n network, ipam string) error {
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {
      "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
      "capabilities": {"io.kubernetes.cri.pod-annotations": true},
      "ipam": %s
    },
    {"type": "loopback"}
  ]
}`, n.name, n.bridge, fmt.Sprintf(ipam, n.dataDir))
	return os.WriteFile(filepath.Join(confDir, "10-"+n.name+".conflist"), []byte(conf), 0o644)
}

// inPool reports whether ip lies in 10.251.<third>.0/24, a pool of the
// package's network.
func inPool(ip netip.Addr, third byte) bool { return inSubnet(ip, 251, third) }

// inSubnet reports whether ip lies in 10.<second>.<third>.0/24.
func inSubnet(ip netip.Addr, second, third byte) bool {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, second, third, 0}), 24).Contains(ip)
}

func errHas(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
