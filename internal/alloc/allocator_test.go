package alloc_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// harness gives a test the same store across calls: the MemStore itself,
// or a disk directory opened and closed around every call so that every
// step also goes through commit and reload.
type harness interface {
	with(t *testing.T, f func(al *alloc.Allocator, s alloc.Lister))
	exhausted(t *testing.T) []int
}

type memHarness struct{ m *alloctest.MemStore }

func (h memHarness) with(t *testing.T, f func(*alloc.Allocator, alloc.Lister)) {
	f(alloc.New(h.m), h.m)
}
func (h memHarness) exhausted(*testing.T) []int { return h.m.Exhausted() }

type diskHarness struct{ dir string }

func (h diskHarness) with(t *testing.T, f func(*alloc.Allocator, alloc.Lister)) {
	t.Helper()
	d, err := hostlocal.Open(h.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f(alloc.New(d), d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func (h diskHarness) exhausted(t *testing.T) []int {
	ids, err := hostlocal.Exhausted(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func forEachStore(t *testing.T, f func(t *testing.T, h harness)) {
	t.Run("mem", func(t *testing.T) { f(t, memHarness{alloctest.NewMemStore()}) })
	t.Run("disk", func(t *testing.T) { f(t, diskHarness{filepath.Join(t.TempDir(), "net")}) })
}

func allocate(t *testing.T, h harness, a alloc.Attachment, rangeID int, rs addrspace.RangeSet, req string) (netip.Prefix, netip.Addr, error) {
	t.Helper()
	var (
		p   netip.Prefix
		gw  netip.Addr
		err error
	)
	var want netip.Addr
	if req != "" {
		want = netip.MustParseAddr(req)
	}
	h.with(t, func(al *alloc.Allocator, s alloc.Lister) { p, gw, err = al.Allocate(a, rangeID, rs, want, "ranges[0]") })
	return p, gw, err
}

func mustAlloc(t *testing.T, h harness, a alloc.Attachment, rs addrspace.RangeSet, req string) netip.Addr {
	t.Helper()
	p, _, err := allocate(t, h, a, 0, rs, req)
	if err != nil {
		t.Fatal(err)
	}
	return p.Addr()
}

func TestAllocateSequentialAndRoundRobin(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		p, gw, err := allocate(t, h, alloctest.CidA, 0, rs, "")
		if err != nil || p != netip.MustParsePrefix("10.0.0.2/29") || gw != netip.MustParseAddr("10.0.0.1") {
			t.Fatalf("first = %v %v %v", p, gw, err)
		}
		if got := mustAlloc(t, h, alloctest.CidB, rs, ""); got != netip.MustParseAddr("10.0.0.3") {
			t.Fatalf("second = %v", got)
		}
		// Releasing .2 must not make it next: host-local round-robins.
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) { alloc.Release(s, alloctest.CidA, nil) })
		if got := mustAlloc(t, h, alloc.Attachment{ContainerID: "c", IfName: "eth0"}, rs, ""); got != netip.MustParseAddr("10.0.0.4") {
			t.Fatalf("third = %v", got)
		}
		h.with(t, func(_ *alloc.Allocator, s alloc.Lister) {
			if last, _ := s.LastReserved(0); last != netip.MustParseAddr("10.0.0.4") {
				t.Fatalf("cursor = %v", last)
			}
		})
	})
}

func TestAllocateRequested(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		if got := mustAlloc(t, h, alloctest.CidA, rs, "10.0.0.5"); got != netip.MustParseAddr("10.0.0.5") {
			t.Fatalf("got %v", got)
		}
		h.with(t, func(_ *alloc.Allocator, s alloc.Lister) {
			if last, _ := s.LastReserved(0); last != netip.MustParseAddr("10.0.0.5") {
				t.Fatalf("requested reservation did not move the cursor: %v", last)
			}
		})
		for _, tt := range []struct{ name, ip string }{
			{"taken", "10.0.0.5"}, {"gateway", "10.0.0.1"}, {"outside", "10.0.1.5"}, {"broadcast", "10.0.0.7"}, {"wrong family", "fd00::5"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, _, err := allocate(t, h, alloctest.CidB, 0, rs, tt.ip)
				alloctest.AssertCode(t, err, cnierr.CodeAddrUnavailable)
				if d := cnierr.As(err).Details; !strings.Contains(d, tt.ip) || !strings.Contains(d, "ranges[0]") {
					t.Fatalf("details %q do not name address and label", d)
				}
			})
		}
		// A requested address skips the duplicate check, like host-local.
		if got := mustAlloc(t, h, alloctest.CidA, rs, "10.0.0.6"); got != netip.MustParseAddr("10.0.0.6") {
			t.Fatalf("got %v", got)
		}
	})
}

func TestAllocateDuplicate(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		other := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.1.0.0/29"})
		ip := mustAlloc(t, h, alloctest.CidA, rs, "")
		_, _, err := allocate(t, h, alloctest.CidA, 0, rs, "")
		alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
		if d := cnierr.As(err).Details; !strings.Contains(d, ip.String()) || !strings.Contains(d, "ranges[0]") {
			t.Fatalf("details %q", d)
		}
		// Same attachment, another range set: fine. Another interface: fine.
		if _, _, err := allocate(t, h, alloctest.CidA, 1, other, ""); err != nil {
			t.Fatal(err)
		}
		mustAlloc(t, h, alloc.Attachment{ContainerID: "cid-a", IfName: "eth1"}, rs, "")
		// A legacy id-only reservation of the same container counts.
		legacy := alloc.Attachment{ContainerID: "cid-l"}
		mustAlloc(t, h, legacy, rs, "")
		_, _, err = allocate(t, h, alloc.Attachment{ContainerID: "cid-l", IfName: "eth0"}, 0, rs, "")
		alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	})
}

func TestAllocateExhaustion(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		for i := range 5 {
			mustAlloc(t, h, alloc.Attachment{ContainerID: "c" + string(rune('0'+i)), IfName: "eth0"}, rs, "")
		}
		_, _, err := allocate(t, h, alloctest.CidA, 3, rs, "")
		alloctest.AssertCode(t, err, cnierr.CodePoolExhausted)
		if d := cnierr.As(err).Details; !strings.Contains(d, "ranges[0]") || !strings.Contains(d, rs.String()) {
			t.Fatalf("details %q", d)
		}
		if got := h.exhausted(t); !slices.Equal(got, []int{3}) {
			t.Fatalf("exhausted = %v", got)
		}
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if rel, err := alloc.Release(s, alloc.Attachment{ContainerID: "c2", IfName: "eth0"}, nil); err != nil || len(rel) != 1 {
				t.Fatalf("release = %v %v", rel, err)
			}
		})
		if got := h.exhausted(t); len(got) != 0 {
			t.Fatalf("exhausted after release = %v", got)
		}
		if got := mustAlloc(t, h, alloctest.CidA, rs, ""); got != netip.MustParseAddr("10.0.0.4") {
			t.Fatalf("got %v", got)
		}
	})
}

func TestRelease(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		other := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "fd00::/120"})
		a1 := mustAlloc(t, h, alloctest.CidA, rs, "")
		p, _, err := allocate(t, h, alloctest.CidA, 1, other, "")
		if err != nil {
			t.Fatal(err)
		}
		b := mustAlloc(t, h, alloctest.CidB, rs, "")
		// Legacy file of the same container must survive: an exact match exists.
		l := mustAlloc(t, h, alloc.Attachment{ContainerID: "cid-a"}, rs, "10.0.0.6")
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			// The hint names b, which alloctest.CidA does not own: it must stay.
			rel, err := alloc.Release(s, alloctest.CidA, []netip.Addr{b})
			if err != nil || !slices.Equal(rel, []netip.Addr{a1, p.Addr()}) && !slices.Equal(rel, []netip.Addr{p.Addr(), a1}) {
				t.Fatalf("released %v %v", rel, err)
			}
			for ip, want := range map[netip.Addr]bool{a1: false, p.Addr(): false, b: true, l: true} {
				if _, ok, _ := s.Owner(ip); ok != want {
					t.Errorf("%v reserved = %v, want %v", ip, ok, want)
				}
			}
		})
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			// Nothing exact left: the legacy file goes.
			if rel, err := alloc.Release(s, alloctest.CidA, nil); err != nil || !slices.Equal(rel, []netip.Addr{l}) {
				t.Fatalf("legacy release = %v %v", rel, err)
			}
			// Unknown attachment: no error.
			if rel, err := alloc.Release(s, alloc.Attachment{ContainerID: "nobody", IfName: "eth0"}, []netip.Addr{b}); err != nil || len(rel) != 0 {
				t.Fatalf("unknown release = %v %v", rel, err)
			}
		})
	})
}

func TestCheck(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		a := mustAlloc(t, h, alloctest.CidA, rs, "")
		l := mustAlloc(t, h, alloc.Attachment{ContainerID: "cid-a"}, rs, "")
		b := mustAlloc(t, h, alloctest.CidB, rs, "")
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if err := alloc.Check(s, alloctest.CidA, []netip.Addr{a, l}); err != nil {
				t.Fatal(err)
			}
			for _, bad := range []netip.Addr{b, netip.MustParseAddr("10.0.0.6")} {
				err := alloc.Check(s, alloctest.CidA, []netip.Addr{a, bad})
				alloctest.AssertCode(t, err, cnierr.CodeUnknownContainer)
				if !strings.Contains(cnierr.As(err).Details, bad.String()) {
					t.Fatalf("details %q", cnierr.As(err).Details)
				}
			}
		})
	})
}

func TestGC(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		keep := mustAlloc(t, h, alloctest.CidA, rs, "")
		drop := mustAlloc(t, h, alloctest.CidB, rs, "")
		legacyKeep := mustAlloc(t, h, alloc.Attachment{ContainerID: "cid-a"}, rs, "")
		legacyDrop := mustAlloc(t, h, alloc.Attachment{ContainerID: "old"}, rs, "")
		valid := func(a alloc.Attachment) bool { return a.ContainerID == "cid-a" }
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			rel, _, err := alloc.CollectGC(s, valid, time.Now())
			if err != nil || !slices.Equal(rel, []netip.Addr{drop, legacyDrop}) {
				t.Fatalf("gc = %v %v", rel, err)
			}
			all, _ := s.All()
			if len(all) != 2 || all[keep] != alloctest.CidA || all[legacyKeep] != (alloc.Attachment{ContainerID: "cid-a"}) {
				t.Fatalf("left %v", all)
			}
			if last, _ := s.LastReserved(0); last != legacyDrop {
				t.Fatalf("gc touched the cursor: %v", last)
			}
		})
		if d, ok := h.(diskHarness); ok {
			for _, f := range []string{"lock", "last_reserved_ip.0"} {
				if _, err := os.Lstat(filepath.Join(d.dir, f)); err != nil {
					t.Fatalf("gc removed %s", f)
				}
			}
		}
	})
}

func TestRollback(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		v6 := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "fd00::/120"})
		earlier := mustAlloc(t, h, alloctest.CidA, rs, "")
		var fresh netip.Addr
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			p, _, err := al.Allocate(alloctest.CidA, 1, v6, netip.Addr{}, "ranges[1]")
			if err != nil {
				t.Fatal(err)
			}
			fresh = p.Addr()
			if err := alloc.Rollback(s, alloctest.CidA, []netip.Addr{fresh}); err != nil {
				t.Fatal(err)
			}
		})
		h.with(t, func(_ *alloc.Allocator, s alloc.Lister) {
			if _, ok, _ := s.Owner(fresh); ok {
				t.Fatal("rolled back address still reserved")
			}
			if o, ok, _ := s.Owner(earlier); !ok || o != alloctest.CidA {
				t.Fatal("rollback released an address the ADD did not reserve")
			}
			if got, _ := s.ByAttachment(alloctest.CidA); !slices.Equal(got, []netip.Addr{earlier}) {
				t.Fatalf("index after rollback = %v", got)
			}
		})
	})
}

func TestAllocateExcluding(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t) // .2-.6, gateway .1
		ex, err := addrspace.ParseExclusions("exclude", []string{"10.0.0.3", "10.0.0.5/32"})
		if err != nil {
			t.Fatal(err)
		}
		allocEx := func(a alloc.Attachment, req string) (netip.Addr, error) {
			var (
				p   netip.Prefix
				err error
			)
			var want netip.Addr
			if req != "" {
				want = netip.MustParseAddr(req)
			}
			h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
				p, _, err = al.Excluding(ex).Allocate(a, 0, rs, want, "pool p")
			})
			return p.Addr(), err
		}
		_, err = allocEx(alloctest.CidA, "10.0.0.5")
		alloctest.AssertCode(t, err, cnierr.CodeAddrUnavailable)
		if e := cnierr.As(err); !strings.Contains(e.Msg, "excluded") || !strings.Contains(e.Details, "10.0.0.5") || !strings.Contains(e.Details, "pool p") {
			t.Fatalf("error %q / %q", e.Msg, e.Details)
		}
		var got []string
		for i := range 3 {
			ip, err := allocEx(alloc.Attachment{ContainerID: fmt.Sprintf("c%d", i), IfName: "eth0"}, "")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ip.String())
		}
		if !slices.Equal(got, []string{"10.0.0.2", "10.0.0.4", "10.0.0.6"}) {
			t.Fatalf("allocated %v", got)
		}
		// Exhausted down to the excluded addresses: 100, never one of them.
		_, err = allocEx(alloctest.CidB, "")
		alloctest.AssertCode(t, err, cnierr.CodePoolExhausted)
		if got := h.exhausted(t); !slices.Equal(got, []int{0}) {
			t.Fatalf("exhausted = %v", got)
		}
		// The same store without exclusions still hands them out.
		if got := mustAlloc(t, h, alloctest.CidB, rs, ""); got != netip.MustParseAddr("10.0.0.3") {
			t.Fatalf("unexcluded allocation = %v", got)
		}
	})
}
