package cri

import (
	"context"
	"testing"
)

// A namespace whose pool is full spills into the shared pool its pool
// overflows into, and gets its own pool back as soon as it has room.
func TestFullPoolSpillsIntoShared(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		first, err := s.c.runPod(context.Background(), "spill", "web-1", nil) // removed below
		if err != nil {
			t.Fatal(err)
		}
		second := s.c.mustRunPod(t, "spill", "web-2", nil)
		for _, p := range []pod{first, second} {
			if !s.in(p.ip, 60) {
				t.Fatalf("%s got %s, want its namespace's pool spill (10.%d.60.0/24)", p.name, p.ip, s.second)
			}
		}
		spilled := s.c.mustRunPod(t, "spill", "web-3", nil)
		if !s.in(spilled.ip, 40) {
			t.Fatalf("with spill full, web-3 got %s, want the shared pool others (10.%d.40.0/24)", spilled.ip, s.second)
		}
		l, ok := leaseOf(s.leases(t), spilled.id)
		if !ok || l.Pool != "others" {
			t.Errorf("web-3's lease %+v (found %v), want pool others", l, ok)
		}
		s.c.removePod(t, first)
		if again := s.c.mustRunPod(t, "spill", "web-4", nil); !s.in(again.ip, 60) {
			t.Errorf("with room in spill again, web-4 got %s, want spill's", again.ip)
		}
	})
}

// A namespace at its quota gets code 106's message in RunPodSandbox's
// error, and nothing reserved, while other namespaces' pods start.
func TestQuotaRefusesOnlyItsTenant(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *stack) {
		s.c.mustRunPod(t, "capped", "web-1", nil)
		s.c.mustRunPod(t, "capped", "web-2", nil)
		before := len(s.leases(t))
		_, err := s.c.runPod(context.Background(), "capped", "web-3", nil)
		if !errHas(err, "tenant quota exceeded") || !errHas(err, "tenant=namespace=capped") {
			t.Fatalf("capped's third pod: RunPodSandbox error = %v, want code 106's message naming the tenant", err)
		}
		if after := len(s.leases(t)); after != before {
			t.Errorf("the refused pod left reservations: %d before, %d after", before, after)
		}
		if p := s.c.mustRunPod(t, "team-b", "api-1", nil); !s.in(p.ip, 20) {
			t.Errorf("team-b's pod got %s beside capped's refusal", p.ip)
		}
	})
}
