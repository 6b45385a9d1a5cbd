package cri

import (
	"context"
	"strings"
	"testing"
)

// TestStickyPodKeepsItsAddress: a StatefulSet's pod removed and created
// again under the same name (a new sandbox, so a new container ID) gets
// its address back, on both allocators; another pod never gets it in
// between. The namespace's rule in ipam-ds-args is "sticky": true.
func TestStickyPodKeepsItsAddress(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		t.Cleanup(func() {
			for _, key := range []string{"stateful/db-0", "stateful/db-1"} {
				if _, stderr, code := s.cli(t, "release", "--sticky-key", key, "--pool", "stateful"); code != 0 && !strings.Contains(stderr, "no hold") {
					t.Errorf("release --sticky-key %s: exit %d: %s", key, code, stderr)
				}
			}
		})
		first, err := s.c.runPod(context.Background(), "stateful", "db-0", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.in(first.ip, 30) {
			t.Fatalf("db-0 got %s, outside pool stateful", first.ip)
		}
		s.c.removePod(t, first)
		held := false
		for _, l := range s.leases(t) {
			held = held || (l.Address == first.ip.String() && l.Owner == "sticky")
		}
		if !held {
			t.Fatalf("after db-0's removal its address %s is not held: %+v", first.ip, s.leases(t))
		}
		other := s.c.mustRunPod(t, "stateful", "db-1", nil)
		if other.ip == first.ip {
			t.Fatalf("db-1 got db-0's held address %s", other.ip)
		}
		again := s.c.mustRunPod(t, "stateful", "db-0", nil)
		if again.id == first.id || again.ip != first.ip {
			t.Fatalf("db-0 re-created as sandbox %s got %s, want %s back", again.id, again.ip, first.ip)
		}
		// The pods go at cleanup, then the holds their removal leaves.
	})
}
