package alloc_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Located is the presence rule both stores answer through (the disk's
// LocateIn, etcd's one read of a chain): an address the attachment holds
// in the pool, else whether its key's hold there still holds for it.
func TestLocated(t *testing.T) {
	standalone, pools := checkTargets(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ip := netip.MustParseAddr
	hold := func(key, owner string, expires time.Time, stale string) *alloc.HoldRecord {
		return &alloc.HoldRecord{Hold: alloc.Hold{Key: key, IfName: "eth0", Owner: owner, Address: "10.5.0.2", Expires: expires}, Stale: stale}
	}
	for _, tt := range []struct {
		name string
		t    alloc.Target
		held []netip.Addr
		hold *alloc.HoldRecord
		want alloc.Presence
	}{
		{"nothing", pools[0], nil, nil, alloc.Presence{}},
		{"a pool's address, whatever its ranges", pools[0], []netip.Addr{ip("10.9.0.1")}, nil, alloc.Presence{Attached: ip("10.9.0.1")}},
		{"a range set's own address only", standalone[1], []netip.Addr{ip("10.1.0.3"), ip("fd00::3")}, nil, alloc.Presence{Attached: ip("fd00::3")}},
		{"another range set's address", standalone[1], []netip.Addr{ip("10.1.0.3")}, nil, alloc.Presence{}},
		{"attached wins over the hold", pools[0], []netip.Addr{ip("10.5.0.3")}, hold("k", "", time.Time{}, ""), alloc.Presence{Attached: ip("10.5.0.3")}},
		{"the key's hold", pools[0], nil, hold("k", "", now.Add(time.Second), ""), alloc.Presence{KeyHeld: true}},
		{"the key's hold, until released", pools[0], nil, hold("k", "", time.Time{}, ""), alloc.Presence{KeyHeld: true}},
		{"the key's live reservation", pools[0], nil, hold("k", "c0", now.Add(-time.Hour), ""), alloc.Presence{KeyHeld: true}},
		{"an expired hold", pools[0], nil, hold("k", "", now, ""), alloc.Presence{}},
		{"another key's hold (a colliding ID)", pools[0], nil, hold("other", "", time.Time{}, ""), alloc.Presence{}},
		{"a stale record", pools[0], nil, hold("k", "", time.Time{}, "its address is not reserved"), alloc.Presence{}},
	} {
		if got := alloc.Located(tt.t, tt.held, tt.hold, "k", "eth0", now); got != tt.want {
			t.Errorf("%s: Located = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
