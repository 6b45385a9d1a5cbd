// Package cri runs cniplugins under Kubernetes's own runtime: private
// containerd daemons with their CRI plugin, driven through the CRI
// runtime/v1 gRPC API exactly as the kubelet drives it, on two releases:
// Debian's containerd 1.6 (a 1.0.0 conflist, Debian's plugins) and
// containerd 2.x (a conflist offering 1.1.0, so CNI STATUS on every CRI
// Status call; upstream plugins v1.9.1).
// containerd execs the bridge plugin, which execs ipam-delegated →
// ipam-ds-args → the allocator from the installed bin dir (the full
// flavour: a strict superset of the lean one).
//
// TestMain starts a 3-member etcd cluster and four containerd daemons, one
// per release and allocator (each with its own root, state, socket and
// CNI conf dir in one temporary directory), and removes them and
// everything they made, also on failure.
package cri

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

var (
	// stacks: per release (1.6, then 2.x), the file allocator's and the
	// etcd allocator's.
	stacks     []*stack
	rels       []*release
	fullBin    string   // the built full flavour, installed into each release's bin dir
	etcdEPs    []string // the etcd cluster's client endpoints
	pauseTar   string
	skipReason string
	// runID is this run's, in every etcd prefix: a node's memory of its
	// fence buckets (under /run) is keyed by prefix and node, and an
	// earlier run's is of another cluster.
	runID string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		skipReason = "containerd's CRI needs root (network namespaces, bridges, mounts)"
		fmt.Fprintln(os.Stderr, "SKIPPING every CRI test:", skipReason)
		return m.Run()
	}
	if _, err := exec.LookPath("runc"); err != nil {
		fmt.Fprintf(os.Stderr, "runc missing: run scripts/test-deps.sh (Debian package runc): %v\n", err)
		return 1
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
	runID = filepath.Base(root)
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	fullBin, err = testkit.Build(root, "full")
	if err == nil {
		rels, err = releases(root, fullBin)
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
	etcdEPs = cluster.Endpoints()

	// Every daemon starts at once: each spends most of its start-up
	// waiting (its CRI plugin's init, the image import).
	type plan struct {
		rel       *release
		name      string
		net       network
		second    byte
		allocator string
	}
	var plans []plan
	for i, r := range rels {
		suffix := ""
		if i > 0 {
			suffix = r.short
		}
		plans = append(plans,
			plan{r, "file", network{name: "cnpcri" + suffix, bridge: fmt.Sprintf("cnpcri%d", 3*i)}, byte(251 - 3*i), "ipam-da-pools"},
			plan{r, "etcd", network{name: "cnpcrie" + suffix, bridge: fmt.Sprintf("cnpcri%d", 3*i+1)}, byte(252 - 3*i), "ipam-da-etcd"})
	}
	stacks = make([]*stack, len(plans))
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prefix, node, etcd := "", "cri-node-"+p.rel.short, ""
			if p.allocator == "ipam-da-etcd" {
				prefix = "/cnpcri-" + runID + "-" + p.rel.short + "/"
				etcd = etcdKeys(prefix, node)
			}
			stacks[i], errs[i] = startStack(filepath.Join(root, p.rel.short+"-"+p.name), p.rel, p.name, p.net, p.second, p.allocator, etcd)
			if stacks[i] != nil {
				stacks[i].storeFlags = storeFlags(stacks[i].c, prefix, node)
			}
		}()
	}
	wg.Wait()
	for _, s := range stacks {
		if s != nil {
			defer s.c.stop()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	for _, r := range rels {
		fmt.Fprintf(os.Stderr, "test/cri: %s (%s), CNI plugins from %s\n", r.label, r.bin("containerd"), r.upstream)
	}
	return m.Run()
}

// etcdKeys is ipam.etcd for a network on the test cluster, under prefix
// as node.
func etcdKeys(prefix, node string) string {
	endpoints, _ := json.Marshal(etcdEPs)
	return fmt.Sprintf(`{"endpoints": %s, "prefix": %q, "nodeName": %q}`, endpoints, prefix, node)
}

// storeFlags tell `leases` and `gc` where the state of c's network is:
// its data dir, or with an etcd prefix, the claims of node under it.
func storeFlags(c *containerd, prefix, node string) []string {
	if prefix == "" {
		return []string{"--data-dir", c.net.dataDir}
	}
	return []string{"--etcd", strings.Join(etcdEPs, ","), "--prefix", prefix, "--node", node}
}

// startStack starts one containerd of release rel whose one network is
// the tenants network with the given allocator, and loads the pause image
// into it.
func startStack(root string, rel *release, name string, n network, second byte, allocator, etcd string) (*stack, error) {
	c, err := startContainerd(root, rel, n, tenantsIPAM(allocator, second, etcd))
	if err != nil {
		return nil, err
	}
	s := &stack{name: rel.label + "/" + name, c: c, second: second}
	if err := os.MkdirAll(c.net.dataDir, 0o755); err != nil {
		return s, err
	}
	return s, c.importImage(pauseTar)
}

// extraContainerd starts one more private containerd of release rel for
// one test, on a network of its own, and stops it when the test ends.
func extraContainerd(t *testing.T, rel *release, n network, ipam string, env ...string) *containerd {
	t.Helper()
	root, err := os.MkdirTemp("", "cnpcri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	c, err := startContainerd(root, rel, n, ipam, env...)
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
