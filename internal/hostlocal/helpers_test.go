package hostlocal

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Attachment is short for the tests, which name many.
type Attachment = alloc.Attachment

// diskHarness opens and closes a state directory around every call, so
// that every step also goes through commit and reload.
type diskHarness struct{ dir string }

func (h diskHarness) with(t *testing.T, f func(al *alloc.Allocator, d *Disk)) {
	t.Helper()
	d, err := Open(h.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f(alloc.New(d), d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

var (
	cidA = Attachment{ContainerID: "cid-a", IfName: "eth0"}
	cidB = Attachment{ContainerID: "cid-b", IfName: "eth0"}
)

// small is 10.0.0.0/29 with gateway .1: allocatable .2-.6.
func small(t testing.TB) addrspace.RangeSet {
	return mustSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func mustSet(t testing.TB, cfgs ...addrspace.RangeConfig) addrspace.RangeSet {
	t.Helper()
	rs, err := addrspace.ParseRangeSet("test", cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func assertCode(t *testing.T, err error, code uint) {
	t.Helper()
	if got := cnierr.Code(err); got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
}

func allocate(t *testing.T, h diskHarness, a Attachment, rangeID int, rs addrspace.RangeSet) (netip.Prefix, error) {
	t.Helper()
	var (
		p   netip.Prefix
		err error
	)
	h.with(t, func(al *alloc.Allocator, _ *Disk) { p, _, err = al.Allocate(a, rangeID, rs, netip.Addr{}, "ranges[0]") })
	return p, err
}

func mustAlloc(t *testing.T, h diskHarness, a Attachment, rs addrspace.RangeSet) netip.Addr {
	t.Helper()
	p, err := allocate(t, h, a, 0, rs)
	if err != nil {
		t.Fatal(err)
	}
	return p.Addr()
}
