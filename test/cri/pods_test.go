package cri

import (
	"context"
	"fmt"
	"net/netip"
	"os"
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
// capability, as in the README's Kubernetes example. containerd loads
// one network (the first file by name) and reloads on change.
type network struct {
	name, bridge, dataDir string
}

// writeNetwork writes n's conflist into confDir before containerd starts,
// so its CRI plugin loads it at start-up. One conflist serves both
// releases, as docs/kubernetes.md advises: containerd 1.6's libcni reads
// cniVersion alone (it refuses anything newer than 1.0.0); 2.x picks the
// highest of cniVersions it knows, 1.1.0, and with it STATUS. ipam is the
// bridge's ipam section, a format string taking the data dir.
func writeNetwork(confDir string, n network, ipam string) error {
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "cniVersions": ["1.0.0", "1.1.0"],
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

func errHas(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
