package cri

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestGCLeavesOtherRuntimesReservations: the attack of issue 38 (item 5).
// containerd shares its node, and the data dir, with Nomad (its own
// network, nomad-batch, over the same pools, from a conflist containerd
// never loads) and with podman (upstream host-local on its network podman).
// Neither runtime's containers are sandboxes containerd lists, so a
// `gc --cri --apply` that treats every reservation under the data dir as
// the CRI runtime's would free theirs, and the next ADD would hand the
// same address out twice. It must release only the leak of the network
// containerd serves (the first conflist of its conf dir), keep the live
// pod's address, leave the others alone and say so.
func TestGCLeavesOtherRuntimesReservations(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		live := s.c.mustRunPod(t, "team-b", "gc-scope", nil)
		leak := s.runtimeADD(t, "leaked-scope-1", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=gone")
		t.Cleanup(func() {
			// Only when gc --cri left it: a DEL of an attachment that holds
			// nothing is another path than this test's.
			if _, ok := leaseOf(s.leases(t), "leaked-scope-1"); ok {
				s.ipamDEL(t, s.pluginConf(t), "leaked-scope-1", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=gone")
			}
		})

		// Nomad's ADD: the same IPAM chain and pools under its own
		// network name, with Nomad's CNI_ARGS; its allocation ID is the
		// container ID.
		nomadConf := s.pluginConf(t)
		nomadConf["name"] = "nomad-batch"
		nomadConf["ipam"].(map[string]any)["namespaceFrom"] = "nomad"
		const alloc = "8f1c2a4e-nomad-alloc"
		nomadArgs := "IgnoreUnknown=1;NOMAD_REGION=global;NOMAD_NAMESPACE=default;NOMAD_JOB_ID=batch;NOMAD_GROUP_NAME=web;NOMAD_ALLOC_ID=" + alloc
		nomad := s.ipamADD(t, nomadConf, alloc, nomadArgs)
		t.Cleanup(func() { s.ipamDEL(t, nomadConf, alloc, nomadArgs) })

		// podman's host-local writes the node's data dir, which only the
		// file allocator's GC reads.
		want := map[string]string{live.id: live.ip.String(), alloc: nomad.String()}
		skipped := []string{"nomad-batch 1"}
		if s.storeFlags[0] == "--data-dir" {
			podmanConf := map[string]any{"cniVersion": "1.0.0", "name": "podman", "type": "bridge",
				"ipam": map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": "10.88.0.0/16"}}}, "dataDir": s.c.net.dataDir}}
			const ctr = "3d9e0c7b-podman-ctr"
			podman := s.ipamADD(t, podmanConf, ctr, "IgnoreUnknown=1;K8S_POD_NAME=web")
			t.Cleanup(func() { s.ipamDEL(t, podmanConf, ctr, "IgnoreUnknown=1;K8S_POD_NAME=web") })
			want[ctr] = podman.String()
			skipped = append(skipped, "podman 1")
		}
		scope := []string{"--min-age", "0"}

		// The plan names the network it covers and what it leaves alone.
		out, stderr, code := s.gc(t, append(scope, "-o", "json")...)
		if code != 0 {
			t.Fatalf("gc --cri dry run: exit %d: %s", code, stderr)
		}
		var plan []lease
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatalf("gc --cri -o json: %v: %s", err, out)
		}
		if len(plan) != 1 || plan[0].Address != leak.String() {
			t.Errorf("gc --cri plans %+v, want only the CRI network's leak %s", plan, leak)
		}
		wantScope := fmt.Sprintf("networks covered: %s; left alone %d reservations of other networks (%s)", s.c.net.name, len(skipped), strings.Join(skipped, ", "))
		if !strings.Contains(stderr, wantScope) {
			t.Errorf("the dry run's stderr does not say %q:\n%s", wantScope, stderr)
		}

		if out, stderr, code := s.gc(t, append(scope, "--apply")...); code != 0 {
			t.Fatalf("gc --cri --apply: exit %d: %s%s", code, out, stderr)
		}
		got := map[string]string{}
		for _, l := range s.leases(t) {
			if l.ContainerID != "" {
				got[l.ContainerID] = l.Address
			}
		}
		for id, addr := range want {
			if got[id] != addr {
				t.Errorf("after gc --cri --apply, %s holds %q, want %s (the reservations now: %v)", id, got[id], addr, got)
			}
		}
		if a, ok := got["leaked-scope-1"]; ok {
			t.Errorf("the CRI network's leak %s survived gc --cri --apply", a)
		}
	})
}

// ipamDEL execs conf's IPAM plugin with DEL, as the runtime's bridge
// plugin would: a test's cleanup of what it reserved outside any sandbox.
func (s *stack) ipamDEL(t *testing.T, conf map[string]any, cid, args string) {
	t.Helper()
	if r := testbin.Run(s.ipamCall(t, conf, "DEL", cid, args)); r.Exit != 0 {
		t.Errorf("DEL %s on %s: exit %d: %s%s", cid, conf["name"], r.Exit, r.Stdout, r.Stderr)
	}
}

// TestGCScopeThatCannotBeToldReleasesNothing: when the runtime's networks
// cannot be read from the conf dir named, gc --cri refuses (exit 1, naming
// the flag and the value) before asking the runtime, and the leak it would
// otherwise free stays: guessing the scope is what freed other runtimes'
// addresses.
func TestGCScopeThatCannotBeToldReleasesNothing(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		leak := s.runtimeADD(t, "leaked-scope-2", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=gone")
		t.Cleanup(func() {
			if _, ok := leaseOf(s.leases(t), "leaked-scope-2"); ok {
				s.ipamDEL(t, s.pluginConf(t), "leaked-scope-2", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=gone")
			}
		})
		empty := t.TempDir()
		broken := t.TempDir()
		if err := os.WriteFile(filepath.Join(broken, "00-broken.conflist"), []byte(`{"name": "x", "plugins": [`), 0o644); err != nil {
			t.Fatal(err)
		}
		// A file without a configuration's extension is none: containerd skips it too.
		if err := os.WriteFile(filepath.Join(empty, "README"), []byte("not a network"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--cni-conf-dir", filepath.Join(empty, "missing")}, "invalid --cni-conf-dir " + filepath.Join(empty, "missing")},
			{[]string{"--cni-conf-dir", empty}, "invalid --cni-conf-dir " + empty + ": cannot tell which networks the runtime serves: no network configuration"},
			{[]string{"--cni-conf-dir", broken}, "invalid --cni-conf-dir " + broken + ": cannot tell which networks the runtime serves: " + filepath.Join(broken, "00-broken.conflist")},
			{[]string{"--cni-conf-dir", s.c.confDir, "--cni-max-conf-num", "-1"}, "invalid --cni-max-conf-num -1: want 0 (all"},
			{[]string{"--cni-conf-dir", "", "--network", ""}, `invalid --network "": want a network's name`},
			{[]string{"--cni-conf-dir", ""}, "no network to reconcile"},
		} {
			out, stderr, code := s.cli(t, append([]string{"gc", "--cri", s.c.sock}, append(tc.args, "--min-age", "0", "--apply")...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) || out != "" {
				t.Errorf("gc --cri %s: exit %d, stdout %q, stderr %q; want exit 1 saying %q", strings.Join(tc.args, " "), code, out, stderr, tc.want)
			}
		}
		if l, ok := leaseOf(s.leases(t), "leaked-scope-2"); !ok || l.Address != leak.String() {
			t.Errorf("a gc --cri that could not tell the runtime's networks released the leak %s", leak)
		}
		// Named outright, the network is covered without a conf dir.
		if out, stderr, code := s.cli(t, "gc", "--cri", s.c.sock, "--cni-conf-dir", "", "--network", s.c.net.name, "--min-age", "0", "--apply"); code != 0 || !strings.Contains(out, leak.String()) {
			t.Errorf("gc --cri --network %s: exit %d, want %s released:\n%s%s", s.c.net.name, code, leak, out, stderr)
		}
	})
}

// TestDELAfterGCReleasedIt: the runtime's DEL of an attachment that gc
// --cri released first (Nomad's DEL of an allocation, the kubelet's of a
// sandbox it saw go) finds nothing and succeeds, on both allocators. With
// an overflow chain whose pools are also selected alone (spill → others,
// and others), ipam-da-etcd once wrote the same index key twice in one
// transaction (its fences then), which etcd refuses: code 5, and a DEL
// retried forever.
func TestDELAfterGCReleasedIt(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		const args = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=gone-3"
		leak := s.runtimeADD(t, "leaked-scope-3", args)
		if out, stderr, code := s.gc(t, "--min-age", "0", "--apply"); code != 0 || !strings.Contains(out, leak.String()) {
			t.Fatalf("gc --cri --apply: exit %d, want %s released:\n%s%s", code, leak, out, stderr)
		}
		s.ipamDEL(t, s.pluginConf(t), "leaked-scope-3", args)
		if _, ok := leaseOf(s.leases(t), "leaked-scope-3"); ok {
			t.Errorf("the DEL after gc --cri left a reservation of leaked-scope-3")
		}
	})
}
