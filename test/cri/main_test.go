// Package cri runs cniplugins under Kubernetes's own runtime: a private
// containerd (Debian's package) with its CRI plugin, driven through the CRI
// runtime/v1 gRPC API exactly as the kubelet drives it. containerd execs
// the bridge plugin, which execs ipam-delegated → ipam-ds-args →
// ipam-da-pools from the installed bin dir.
//
// TestMain starts one containerd for the package (its own root, state,
// socket, CNI bin and conf dirs, all in one temporary directory) and
// removes it, and everything it made, also on failure.
package cri

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testbin"
)

var (
	ctd        *containerd // the package's daemon, on network net
	net        network
	pauseTar   string
	binDir     string
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
	// Short: containerd's socket path must fit in 108 bytes.
	root, err := os.MkdirTemp("", "cnpcri-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	bin, err := testbin.Build(root, "full")
	if err == nil {
		binDir = filepath.Join(root, "bin")
		err = testbin.Install(bin, binDir)
	}
	if err == nil {
		err = linkUpstream(binDir, "bridge", "loopback", "host-local")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctd, err = startContainerd(filepath.Join(root, "ctd"), binDir, network{name: "cnpcri", bridge: "cnpcri0"}, tenantsIPAM)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ctd.stop()
	net = ctd.net
	if pauseTar, err = buildPause(root); err == nil {
		err = ctd.importImage(pauseTar)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
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
