package alloc_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// A range that starts on the network address or ends on the IPv4
// broadcast address (host-local accepts both, and hands them out) keeps
// them in the range, warns, and never hands them out: not by round robin,
// not on request.
func TestNetworkAndBroadcastNeverHandedOut(t *testing.T) {
	tests := []struct {
		name    string
		cfg     addrspace.RangeConfig
		lap     []string // every address a lap hands out, in order
		warning bool
		refused []string // requests answered with 101
	}{
		{"v4 start on network, end on broadcast", addrspace.RangeConfig{Subnet: "10.0.0.0/29", RangeStart: "10.0.0.0", RangeEnd: "10.0.0.7"},
			[]string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}, true, []string{"10.0.0.0", "10.0.0.7", "10.0.0.1"}},
		{"v4 gateway elsewhere frees .1", addrspace.RangeConfig{Subnet: "10.0.0.0/30", RangeStart: "10.0.0.0", RangeEnd: "10.0.0.3", Gateway: "169.254.1.1"},
			[]string{"10.0.0.1", "10.0.0.2"}, true, []string{"10.0.0.0", "10.0.0.3"}},
		{"v6 start on network", addrspace.RangeConfig{Subnet: "fd00::/125", RangeStart: "fd00::"},
			[]string{"fd00::2", "fd00::3", "fd00::4", "fd00::5", "fd00::6", "fd00::7"}, true, []string{"fd00::"}},
		{"v6 last address is usable", addrspace.RangeConfig{Subnet: "fd00::/126", RangeEnd: "fd00::3"},
			[]string{"fd00::2", "fd00::3"}, false, nil},
		{"defaults", addrspace.RangeConfig{Subnet: "10.0.0.0/30"}, []string{"10.0.0.2"}, false, []string{"10.0.0.3"}},
		{"only the network address", addrspace.RangeConfig{Subnet: "10.0.0.0/29", RangeStart: "10.0.0.0", RangeEnd: "10.0.0.0"}, nil, true, []string{"10.0.0.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := alloctest.MustSet(t, tt.cfg)
			if got := rs[0].Warning() != ""; got != tt.warning {
				t.Errorf("Warning() = %q, want one: %v", rs[0].Warning(), tt.warning)
			}
			var lap []string
			it := rs.Iter(netip.Addr{})
			for ip, _, ok := it.Next(); ok; ip, _, ok = it.Next() {
				lap = append(lap, ip.String())
			}
			if !slices.Equal(lap, tt.lap) {
				t.Errorf("lap = %v, want %v", lap, tt.lap)
			}
			al := alloc.New(alloctest.NewMemStore())
			for _, s := range tt.refused {
				if _, _, err := al.Allocate(alloctest.CidA, 0, rs, netip.MustParseAddr(s), "r"); err == nil || cnierr.Code(err) != 101 {
					t.Errorf("request %s: %v, want 101", s, err)
				}
			}
			// Round robin until full: exactly the lap, then 100. Bounded by
			// the lap: one allocation past it that succeeds is the failure.
			var got []string
			for i := 0; ; i++ {
				if i > len(tt.lap) {
					t.Fatalf("still allocating after %d addresses (%v), want 100 after the lap of %d", i, got, len(tt.lap))
				}
				p, _, err := al.Allocate(alloc.Attachment{ContainerID: "c" + string(rune('a'+i)), IfName: "eth0"}, 0, rs, netip.Addr{}, "r")
				if err != nil {
					if cnierr.Code(err) != 100 {
						t.Fatalf("allocation %d: %v, want 100 once full", i, err)
					}
					break
				}
				got = append(got, p.Addr().String())
			}
			if !slices.Equal(got, tt.lap) {
				t.Errorf("handed out %v, want %v", got, tt.lap)
			}
		})
	}
}

// Rolling back what a failed ADD reserved keeps the exhaustion record of
// the range set that made it fail: nothing taken before the ADD was freed.
func TestRollbackKeepsExhaustion(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		full := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.9.0.0/30"}) // one address: .2
		mustAllocID(t, h, alloctest.CidB, 1, full)
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			p, _, err := al.Allocate(alloctest.CidA, 0, alloctest.Small(t), netip.Addr{}, "r0")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := al.Allocate(alloctest.CidA, 1, full, netip.Addr{}, "r1"); cnierr.Code(err) != 100 {
				t.Fatalf("want 100, got %v", err)
			}
			if err := alloc.Rollback(s, alloctest.CidA, []netip.Addr{p.Addr()}); err != nil {
				t.Fatal(err)
			}
		})
		if got := h.exhausted(t); !slices.Equal(got, []int{1}) {
			t.Errorf("exhausted after rollback = %v, want [1]", got)
		}
	})
}

// Free, unlike Rollback, returns an address taken before: the range set
// recorded as full is not any more, so its record goes, and only the
// holder's address is freed.
func TestFreeClearsExhaustion(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		full := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.9.0.0/30"}) // one address: .2
		mustAllocID(t, h, alloctest.CidB, 1, full)
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if _, _, err := al.Allocate(alloctest.CidA, 1, full, netip.Addr{}, "r1"); cnierr.Code(err) != 100 {
				t.Fatalf("want 100, got %v", err)
			}
			if got, err := alloc.Free(s, alloctest.CidA, []netip.Addr{netip.MustParseAddr("10.9.0.2")}); err != nil || len(got) != 0 {
				t.Fatalf("Free by a non-holder = %v, %v; want nothing freed", got, err)
			}
		})
		if got := h.exhausted(t); !slices.Equal(got, []int{1}) {
			t.Errorf("exhausted after a Free that freed nothing = %v, want [1]", got)
		}
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if got, err := alloc.Free(s, alloctest.CidB, []netip.Addr{netip.MustParseAddr("10.9.0.2")}); err != nil || !slices.Equal(got, []netip.Addr{netip.MustParseAddr("10.9.0.2")}) {
				t.Fatalf("Free by the holder = %v, %v", got, err)
			}
		})
		if got := h.exhausted(t); len(got) != 0 {
			t.Errorf("exhausted after Free = %v, want none", got)
		}
	})
}

func mustAllocID(t *testing.T, h harness, a alloc.Attachment, rangeID int, rs addrspace.RangeSet) {
	t.Helper()
	if _, _, err := allocate(t, h, a, rangeID, rs, ""); err != nil {
		t.Fatal(err)
	}
}

// Held is a ledger's side of CHECK without addresses: every reservation
// of the attachment, whatever its range (CheckHeld judges ranges), and
// an id-only legacy one of its container.
func TestHeld(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if got, err := alloc.Held(s, alloctest.CidA); len(got) != 0 || err != nil {
				t.Fatalf("empty store: %v, %v", got, err)
			}
			if _, err := s.Reserve(alloctest.CidA, netip.MustParseAddr("192.0.2.9")); err != nil { // in no range
				t.Fatal(err)
			}
			if _, err := s.Reserve(alloc.Attachment{ContainerID: "old"}, netip.MustParseAddr("192.0.2.10")); err != nil {
				t.Fatal(err)
			}
		})
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			for a, want := range map[alloc.Attachment]string{
				alloctest.CidA: "192.0.2.9", alloctest.CidB: "", {ContainerID: "old", IfName: "eth0"}: "192.0.2.10",
				{ContainerID: "cid-a", IfName: "eth1"}: "",
			} {
				got, err := alloc.Held(s, a)
				if fmt.Sprint(got) != "["+want+"]" || err != nil {
					t.Errorf("Held(%v) = %v, %v; want [%s]", a, got, err, want)
				}
			}
		})
	})
}
