package alloc_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// What a dry run plans is what the GC then frees and holds, and the keyed
// reservation it holds comes back to its key.
func TestCollectGCAppliesThePlan(t *testing.T) {
	m := alloctest.NewMemStore()
	now := time.Now()
	ips := []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.4")}
	for i, a := range []alloc.Attachment{alloctest.CidA, alloctest.CidB, alloctest.CidB} {
		if _, err := m.Reserve(a, ips[i]); err != nil {
			t.Fatal(err)
		}
	}
	id := alloc.StickyID("ns/web-0", "eth0")
	if err := m.WriteHold(id, alloc.Hold{Key: "ns/web-0", IfName: "eth0", Address: ips[2].String(), Owner: alloctest.CidB.ContainerID, HoldFor: "1m0s"}); err != nil {
		t.Fatal(err)
	}
	keep := alloc.NewKeepSet("", []alloc.Attachment{alloctest.CidA}).Keeps
	v, err := alloc.ReadGC(m)
	if err != nil {
		t.Fatal(err)
	}
	planned := alloc.PlanGC(v, keep, now).Freed()
	freed, held, err := alloc.CollectGC(m, keep, now)
	if err != nil || !slices.Equal(freed, planned) || !slices.Equal(freed, ips[1:2]) || !slices.Equal(held, ips[2:]) {
		t.Fatalf("CollectGC = %v %v %v, planned %v", freed, held, err, planned)
	}
	if owner, ok, _ := m.Owner(ips[2]); !ok || owner != alloc.HoldOwner(id) {
		t.Errorf("keyed reservation now %v %v, want held for its key", owner, ok)
	}
}
