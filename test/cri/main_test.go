// Package cri runs cniplugins under Kubernetes's own runtime: private
// containerd daemons (Debian's package) with their CRI plugin, driven
// through the CRI runtime/v1 gRPC API exactly as the kubelet drives it.
// containerd execs the bridge plugin, which execs ipam-delegated →
// ipam-ds-args → the allocator from the installed bin dir (the full
// flavour: a strict superset of the lean one).
//
// TestMain starts a 3-member etcd cluster and two containerd daemons, one
// per allocator (each with its own root, state, socket and CNI conf dir in
// one temporary directory), and removes them and everything they made,
// also on failure.
package cri

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

var (
	stacks     []*stack // the file allocator's, then the etcd allocator's
	binDir     string
	pauseTar   string
	skipReason string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		skipReason = "containerd's CRI needs root (network namespaces, bridges, mounts)"
		fmt.Fprintln(os.Stderr, "SKIPPING every CRI test:", skipReason)
		return m.Run()
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(bin); err != nil {
			fmt.Fprintf(os.Stderr, "%s missing: run scripts/test-deps.sh (Debian packages containerd, runc): %v\n", bin, err)
			return 1
		}
	}
	if err := etcdtest.Available(); err != nil {
		fmt.Fprintf(os.Stderr, "etcd missing: run scripts/test-deps.sh (Debian package etcd-server): %v\n", err)
		return 1
	}
	// Short: containerd's socket path must fit in 108 bytes.
	root, err := os.MkdirTemp("", "cnpcri-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	bin, err := testkit.Build(root, "full")
	if err == nil {
		binDir = filepath.Join(root, "bin")
		err = testkit.Install(bin, binDir)
	}
	if err == nil {
		err = linkUpstream(binDir, "bridge", "loopback", "host-local")
	}
	if err == nil {
		pauseTar, err = buildPause(root)
	}
	if err != nil {
		return fail(err)
	}
	cluster, err := etcdtest.Start(etcdtest.Options{})
	if err != nil {
		return fail(err)
	}
	defer cluster.Stop()
	endpoints, _ := json.Marshal(cluster.Endpoints())
	etcdKeys := fmt.Sprintf(`{"endpoints": %s, "prefix": "/cnpcri/", "nodeName": "cri-node"}`, endpoints)

	file, err := startStack(filepath.Join(root, "file"), "file", network{name: "cnpcri", bridge: "cnpcri0"}, 251, "ipam-da-pools", "")
	if file != nil {
		defer file.c.stop()
	}
	if err != nil {
		return fail(err)
	}
	file.storeFlags = []string{"--data-dir", file.c.net.dataDir}
	etcd, err := startStack(filepath.Join(root, "etcd"), "etcd", network{name: "cnpcrie", bridge: "cnpcri1"}, 252, "ipam-da-etcd", etcdKeys)
	if etcd != nil {
		defer etcd.c.stop()
	}
	if err != nil {
		return fail(err)
	}
	etcd.storeFlags = []string{"--etcd", strings.Join(cluster.Endpoints(), ","), "--prefix", "/cnpcri/", "--node", "cri-node"}
	stacks = []*stack{file, etcd}
	return m.Run()
}

// startStack starts one containerd whose one network is the tenants
// network with the given allocator, and loads the pause image into it.
func startStack(root, name string, n network, second byte, allocator, etcd string) (*stack, error) {
	c, err := startContainerd(root, binDir, n, tenantsIPAM(allocator, second, etcd))
	if err != nil {
		return nil, err
	}
	s := &stack{name: name, c: c, second: second}
	if err := os.MkdirAll(c.net.dataDir, 0o755); err != nil {
		return s, err
	}
	return s, c.importImage(pauseTar)
}

// linkUpstream puts Debian's plugins into the bin dir: containerd has one,
// and sets up the pod's loopback with the loopback plugin itself.
func linkUpstream(dir string, names ...string) error {
	for _, n := range names {
		src := filepath.Join("/usr/lib/cni", n)
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("%s missing: run scripts/test-deps.sh (Debian package containernetworking-plugins): %w", src, err)
		}
		if err := os.Symlink(src, filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// extraContainerd starts one more private containerd for one test, on a
// network of its own, and stops it when the test ends.
func extraContainerd(t *testing.T, n network, ipam string) *containerd {
	t.Helper()
	root, err := os.MkdirTemp("", "cnpcri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	c, err := startContainerd(root, binDir, n, ipam)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	if err := c.importImage(pauseTar); err != nil {
		t.Fatal(err)
	}
	return c
}

func needCRI(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip("SKIPPING: " + skipReason)
	}
}
