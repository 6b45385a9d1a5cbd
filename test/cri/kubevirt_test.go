package cri

import (
	"encoding/json"
	"strings"
	"testing"
)

// vmLease is one reservation with its migration fields, as `cniplugins
// leases -o json` reports it.
type vmLease struct {
	Address     string `json:"address"`
	ContainerID string `json:"containerID"`
	Owner       string `json:"owner"`
	StickyKey   string `json:"stickyKey"`
	SecondOwner string `json:"secondOwner"`
}

func (s *stack) vmLeases(t *testing.T, addr string) []vmLease {
	t.Helper()
	out, stderr, code := s.cli(t, "leases", "-o", "json")
	if code != 0 {
		t.Fatalf("cniplugins leases: exit %d: %s", code, stderr)
	}
	var all, ls []vmLease
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("leases -o json: %v: %s", err, out)
	}
	for _, l := range all {
		if l.Address == addr {
			ls = append(ls, l)
		}
	}
	return ls
}

// vmPod runs a pod that the test removes itself (once: containerd 1.6
// refuses a second StopPodSandbox), and at cleanup if it has not.
func (s *stack) vmPod(t *testing.T, name string, annotations map[string]string) (pod, func()) {
	t.Helper()
	p, err := s.c.runPod(t.Context(), "vms", name, annotations)
	if err != nil {
		t.Fatalf("RunPodSandbox vms/%s: %v", name, err)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			s.c.removePod(t, p)
		}
	}
	t.Cleanup(remove)
	if !p.ip.IsValid() {
		t.Fatalf("pod vms/%s: PodSandboxStatus shows no address", name)
	}
	return p, remove
}

// TestKubevirtLiveMigration: a VM's virt-launcher pods as KubeVirt runs
// them through containerd, on both allocators (namespace vms's rule keys
// pods by "kubevirt"): the migration's target pod, started while the
// source runs, gets the source's address; stopping the source leaves it
// the target's; removing the target holds it for the VM until its key is
// released, and no other pod gets it meanwhile.
func TestKubevirtLiveMigration(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		const key = "vms/vm/pg"
		released := false
		t.Cleanup(func() {
			if released {
				return
			}
			if _, stderr, code := s.cli(t, "release", "--sticky-key", key, "--pool", "vms"); code != 0 && !strings.Contains(stderr, "no hold") {
				t.Errorf("release --sticky-key %s: exit %d: %s", key, code, stderr)
			}
		})
		vm := map[string]string{"kubevirt.io/domain": "pg"}
		src, removeSrc := s.vmPod(t, "virt-launcher-pg-src01", vm)
		if !s.in(src.ip, 50) {
			t.Fatalf("the VM got %s, outside pool vms", src.ip)
		}
		tgt, removeTgt := s.vmPod(t, "virt-launcher-pg-tgt01", map[string]string{"kubevirt.io/domain": "pg", "kubevirt.io/migrationJobName": "pg-migration-1"})
		if tgt.ip != src.ip {
			t.Fatalf("the migration target got %s, want the source's %s", tgt.ip, src.ip)
		}
		shown := false
		for _, l := range s.vmLeases(t, src.ip.String()) {
			shown = shown || (l.ContainerID == src.id && l.SecondOwner == tgt.id)
		}
		if !shown {
			t.Fatalf("leases during the migration: %+v, want %s's second owner %s", s.vmLeases(t, src.ip.String()), src.id, tgt.id)
		}
		// A third pod of the VM is refused while both run.
		if p, err := s.c.runPod(t.Context(), "vms", "virt-launcher-pg-third", map[string]string{"kubevirt.io/domain": "pg", "kubevirt.io/migrationJobName": "pg-migration-2"}); err == nil {
			s.c.removePod(t, p)
			t.Fatalf("a third pod of the VM got a sandbox (%s)", p.ip)
		}
		// Migration done: KubeVirt deletes the source pod.
		removeSrc()
		for _, l := range s.vmLeases(t, src.ip.String()) {
			if l.ContainerID != tgt.id || l.SecondOwner != "" && l.SecondOwner != tgt.id {
				t.Fatalf("after the source's removal: %+v, want %s the owner alone", l, tgt.id)
			}
		}
		other := s.c.mustRunPod(t, "vms", "virt-launcher-other-x1", map[string]string{"kubevirt.io/domain": "other"})
		if other.ip == src.ip {
			t.Fatalf("another VM got %s", other.ip)
		}
		// The VM stops: its address is held for it until the key is released.
		removeTgt()
		held := false
		for _, l := range s.vmLeases(t, src.ip.String()) {
			held = held || (l.Owner == "sticky" && l.StickyKey == key)
		}
		if !held {
			t.Fatalf("after the VM stopped its address %s is not held for %s: %+v", src.ip, key, s.vmLeases(t, src.ip.String()))
		}
		plain := s.c.mustRunPod(t, "vms", "web-0", nil)
		if plain.ip == src.ip {
			t.Fatalf("a pod without the VM's key got its held address %s", src.ip)
		}
		if _, stderr, code := s.cli(t, "release", "--sticky-key", key, "--pool", "vms"); code != 0 {
			t.Fatalf("release --sticky-key %s: exit %d: %s", key, code, stderr)
		}
		released = true
		if ls := s.vmLeases(t, src.ip.String()); len(ls) != 0 {
			t.Errorf("after the key's release %s is still kept: %+v", src.ip, ls)
		}
	})
}
