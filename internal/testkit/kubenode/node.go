// Package kubenode runs a single-node Kubernetes cluster for the tests and
// the benchmark: an API server on its own one-member etcd, a controller
// manager, a scheduler and a kubelet over a private containerd 2.x, all on
// 127.0.0.1, built by scripts/test-deps.sh from the Go module proxy.
//
// The node starts with an empty CNI bin dir and net.d of its own (so it is
// NotReady until something installs a network), and Stop leaves the host
// as Start found it: every process, mount, pod network, link, sysctl,
// iptables chain and directory the cluster made outside its temporary
// root is removed or restored, also when a test fails half-way.
package kubenode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
	"github.com/cniplugins/cniplugins/internal/testkit/hostclean"
)

// Where scripts/test-deps.sh builds Kubernetes and containerd 2.x. The
// versions are the ones docs/kubernetes.md says are tested.
const (
	KubernetesVersion = "v1.34.4"
	KubernetesDir     = "/usr/local/lib/cniplugins-test/kubernetes-" + KubernetesVersion
	ContainerdDir     = "/usr/local/lib/cniplugins-test/containerd-v2.4.2"
	// PluginsDir holds upstream CNI plugins (bridge, loopback, host-local)
	// of v1.9.1: a node's bin dir has them from its distribution before
	// any network is installed.
	PluginsDir = "/usr/local/lib/cniplugins-test/cni-plugins-v1.9.1"
)

// upstreamPlugins are the plugins of PluginsDir the node's bin dir holds.
var upstreamPlugins = []string{"bridge", "loopback", "host-local"}

// PauseImage is the sandbox image the node's containerd keeps pinned:
// a static pause binary imported at start-up, never pulled.
const PauseImage = "registry.k8s.io/pause:3.10"

// Node is a running single-node cluster.
type Node struct {
	Name string // the node's name: the host's name when it resolves to loopback
	// Root holds every file of the cluster; short, for unix socket paths.
	Root string
	// Kubeconfig is the cluster administrator's (system:masters).
	Kubeconfig string
	// CNIBin and NetDir are the node's /opt/cni/bin and /etc/cni/net.d:
	// containerd's CNI bin dir and conf dir. Both start empty.
	CNIBin, NetDir string
	// ContainerdSock is the runtime's CRI socket, as the kubelet reaches it.
	ContainerdSock string
	// Links are the host links the node's networks make (their bridges):
	// Stop deletes them once every pod is gone.
	Links []string

	etcd       *etcdtest.Cluster
	containerd *proc
	procs      []*proc // the Kubernetes components, in start order
	guard      *hostGuard
	pki        *clusterPKI
	ports      ports
}

// Available says why no node can be started here, or nil.
func Available() error {
	var missing []string
	for _, b := range components {
		if _, err := os.Stat(filepath.Join(KubernetesDir, b)); err != nil {
			missing = append(missing, filepath.Join(KubernetesDir, b))
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		if _, err := os.Stat(filepath.Join(ContainerdDir, b)); err != nil {
			missing = append(missing, filepath.Join(ContainerdDir, b))
		}
	}
	for _, b := range upstreamPlugins {
		if _, err := os.Stat(filepath.Join(PluginsDir, b)); err != nil {
			missing = append(missing, filepath.Join(PluginsDir, b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing: run scripts/test-deps.sh as root (it builds Kubernetes %s and containerd 2.x from the Go module proxy)", strings.Join(missing, ", "), KubernetesVersion)
	}
	if os.Geteuid() != 0 {
		return errors.New("a kubelet and containerd need root (network namespaces, mounts, cgroups)")
	}
	return etcdtest.Available()
}

// components are the Kubernetes binaries the node runs (and kubectl).
var components = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"}

// Start brings a node up under a new directory of os.TempDir() and waits
// until the API server answers and the kubelet has registered the node.
// On error, everything started is stopped again.
func Start(ctx context.Context) (n *Node, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "cnpk8s-")
	if err != nil {
		return nil, err
	}
	n = &Node{
		Name: nodeName(), Root: root, Kubeconfig: filepath.Join(root, "admin.kubeconfig"),
		CNIBin: filepath.Join(root, "opt-cni-bin"), NetDir: filepath.Join(root, "net.d"),
		ContainerdSock: filepath.Join(root, "containerd", "c.sock"),
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("kubenode: %w%s", err, n.logTails())
			n.Stop()
			n = nil
		}
	}()
	n.guard = guardHost()
	for _, d := range []string{n.CNIBin, n.NetDir, filepath.Dir(n.ContainerdSock)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return n, err
		}
	}
	for _, b := range upstreamPlugins {
		if err := os.Symlink(filepath.Join(PluginsDir, b), filepath.Join(n.CNIBin, b)); err != nil {
			return n, err
		}
	}
	if n.ports, err = freePorts(); err != nil {
		return n, err
	}
	if n.pki, err = writePKI(filepath.Join(root, "pki"), n.Name); err != nil {
		return n, err
	}
	if err := n.writeKubeconfigs(); err != nil {
		return n, err
	}
	if n.etcd, err = etcdtest.Start(etcdtest.Options{Members: 1, Dir: filepath.Join(root, "etcd")}); err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	if err := n.startControlPlane(ctx); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// Stop tears the node down: the kubelet first (so nothing recreates a
// pod), then every pod sandbox through the runtime (each one's CNI DEL),
// the runtime, the control plane and etcd; then it restores the host.
func (n *Node) Stop() {
	if n == nil {
		return
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		if n.procs[i].name == "kubelet" {
			n.procs[i].stop(10 * time.Second)
		}
	}
	n.stopContainerd()
	for _, l := range n.Links {
		_ = exec.Command("ip", "link", "del", l).Run()
	}
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].stop(10 * time.Second)
	}
	if n.etcd != nil {
		n.etcd.Stop()
	}
	hostclean.UnmountUnder(n.Root)
	n.guard.restore(n.Root)
	_ = os.RemoveAll(n.Root)
}

// nodeName is the host's name when it resolves to a loopback address, so
// that the API server reaches the kubelet by name on 127.0.0.1 (a kubelet
// refuses a loopback node IP); else localhost.
func nodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	addrs, err := net.LookupHost(h)
	if err != nil || len(addrs) == 0 || !slices.ContainsFunc(addrs, func(a string) bool {
		ip := net.ParseIP(a)
		return ip != nil && ip.IsLoopback()
	}) {
		return "localhost"
	}
	return strings.ToLower(h)
}

// ports are the listeners of the control plane and the kubelet.
type ports struct {
	apiserver, kubelet, scheduler, controllerManager int
}

func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ps [4]int
	for i := range ps {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, err
		}
		ls = append(ls, l)
		ps[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports{apiserver: ps[0], kubelet: ps[1], scheduler: ps[2], controllerManager: ps[3]}, nil
}

// logTails is the end of every component's log, for a start-up failure.
func (n *Node) logTails() string {
	var b strings.Builder
	all := n.procs
	if n.containerd != nil {
		all = append([]*proc{n.containerd}, all...)
	}
	for _, p := range all {
		fmt.Fprintf(&b, "\n--- %s (%s):\n%s", p.name, p.log, p.tail(3000))
	}
	return b.String()
}
