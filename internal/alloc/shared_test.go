package alloc_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// cursorFails is a store whose cursor cannot be written.
type cursorFails struct{ *alloctest.MemStore }

func (cursorFails) SetLastReserved(int, netip.Addr) error { return errors.New("disk full") }

func TestAllocateShared(t *testing.T) {
	rs, err := addrspace.ParseRangeSet("r", []addrspace.RangeConfig{{Subnet: "10.213.7.0/29"}})
	if err != nil {
		t.Fatal(err)
	}
	owner := alloc.Attachment{ContainerID: "_docker", IfName: "pool,10.213.7.0/29", Network: "_docker"}
	m := alloctest.NewMemStore()
	al := alloc.New(m)
	// One owner, many addresses: .2 to .6 (.1 is the gateway, .7 broadcast).
	var got []string
	for {
		if len(got) > 5 {
			t.Fatalf("still allocating after %v: a /29 has 5 addresses to hand out", got)
		}
		p, err := al.AllocateShared(owner, 0, rs, netip.Addr{}, "pool")
		if err != nil {
			if len(got) != 5 {
				t.Fatalf("after %v: %v", got, err)
			}
			break
		}
		got = append(got, p.String())
	}
	if got[0] != "10.213.7.2/29" || got[4] != "10.213.7.6/29" {
		t.Errorf("allocated %v", got)
	}
	// Requested: taken, the gateway, outside, then a free one.
	if err := alloc.Rollback(m, owner, []netip.Addr{netip.MustParseAddr("10.213.7.4")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ip string
		ok bool
	}{{"10.213.7.3", false}, {"10.213.7.1", false}, {"10.213.8.1", false}, {"10.213.7.4", true}} {
		_, err := al.AllocateShared(owner, 0, rs, netip.MustParseAddr(c.ip), "pool")
		if (err == nil) != c.ok {
			t.Errorf("requested %s: err %v", c.ip, err)
		}
	}
	// All or nothing: a cursor that cannot be written undoes the reservation.
	failing := alloctest.NewMemStore()
	fail := alloc.New(cursorFails{failing})
	if _, err := fail.AllocateShared(owner, 0, rs, netip.Addr{}, "pool"); err == nil {
		t.Fatal("no error from a failed cursor write")
	}
	if all, _ := failing.All(); len(all) != 0 {
		t.Errorf("a failed allocation left %v", all)
	}
}
