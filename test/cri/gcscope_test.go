package cri

import (
	"encoding/json"
	"fmt"
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
			// nothing is another path (fenceUnknown) than this test's.
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
		scope := []string{"--cni-conf-dir", s.c.confDir, "--min-age", "0"}

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
	stdin, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	typ, _ := conf["ipam"].(map[string]any)["type"].(string)
	r := testbin.Run(testbin.Call{Path: s.c.rel.cniBin, Plugin: typ, Command: "DEL", ContainerID: cid, IfName: "eth0",
		Netns: "/var/run/netns/" + cid, Args: args, Stdin: stdin})
	if r.Exit != 0 {
		t.Errorf("DEL %s on %s: exit %d: %s%s", cid, conf["name"], r.Exit, r.Stdout, r.Stderr)
	}
}
