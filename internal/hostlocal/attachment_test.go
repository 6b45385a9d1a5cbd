package hostlocal

import (
	"net/netip"
	"testing"
)

func TestReservationContentRoundTrip(t *testing.T) {
	tests := []struct {
		a    Attachment
		body string
	}{
		{Attachment{ContainerID: "cid", IfName: "eth0"}, "cid\r\neth0"},
		{Attachment{ContainerID: "cid", IfName: "eth0", Network: "net-a"}, "cid\r\neth0\r\nnet-a"},
	}
	for _, tt := range tests {
		if got := reservationContent(tt.a); got != tt.body {
			t.Errorf("content(%+v) = %q, want %q", tt.a, got, tt.body)
		}
		if got := parseReservation([]byte(tt.body + "\n")); got != tt.a {
			t.Errorf("parse(%q) = %+v, want %+v", tt.body, got, tt.a)
		}
	}
	if got := parseReservation([]byte(" legacy-id \n")); got != (Attachment{ContainerID: "legacy-id"}) {
		t.Errorf("legacy body parsed as %+v", got)
	}
	a := Attachment{ContainerID: "c", IfName: "eth0", Network: "n1"}
	if !a.Is(Attachment{ContainerID: "c", IfName: "eth0", Network: "n2"}) || a.Is(Attachment{ContainerID: "c", IfName: "eth1"}) {
		t.Errorf("Is must compare container ID and ifname only")
	}
}

// A pool directory shared by two networks: the allocator sees one
// attachment whatever network it was recorded under.
func TestNetworkTagIsNotIdentity(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := small(t)
		a := Attachment{ContainerID: "c", IfName: "eth0", Network: "net-a"}
		ip := mustAlloc(t, h, a, rs, "")
		h.with(t, func(al *Allocator, s Store) {
			if _, _, err := al.Allocate(Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, 0, rs, netip.Addr{}, "r"); err == nil {
				t.Errorf("same attachment under another network got a second address")
			}
			owner, _, _ := s.Owner(ip)
			if owner.Network != "net-a" {
				t.Errorf("owner %+v lost its network", owner)
			}
			if err := al.Check(Attachment{ContainerID: "c", IfName: "eth0"}, []netip.Addr{ip}); err != nil {
				t.Error(err)
			}
			// The same (container, ifname) wrongly reused on another
			// network must not free net-a's address (its rollback DEL).
			if rel, err := al.Release(Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, []netip.Addr{ip}); err != nil || len(rel) != 0 {
				t.Errorf("net-b released net-a's address: %v, %v", rel, err)
			}
			if err := al.Check(Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, []netip.Addr{ip}); err == nil {
				t.Errorf("CHECK from net-b accepted net-a's address")
			}
			rel, err := al.Release(Attachment{ContainerID: "c", IfName: "eth0", Network: "net-a"}, nil)
			if err != nil || len(rel) != 1 {
				t.Errorf("release = %v, %v", rel, err)
			}
		})
	})
}

func TestAttachmentKind(t *testing.T) {
	for _, tt := range []struct {
		a    Attachment
		want string
	}{
		{Attachment{ContainerID: "c1", IfName: "eth0"}, "cni"},
		{Attachment{ContainerID: "c1", IfName: "eth0", Network: "blue"}, "cni"},
		{Attachment{ContainerID: "c1"}, "legacy"},
		{Attachment{ContainerID: "_docker", IfName: "0123abcd"}, "docker"},
		{Attachment{ContainerID: "_docker"}, "docker"},
		{Attachment{ContainerID: "_", IfName: "x"}, "unknown"},
	} {
		if got := tt.a.Kind(); got != tt.want {
			t.Errorf("%+v.Kind() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

func TestKeepSet(t *testing.T) {
	k := NewKeepSet("blue", []Attachment{{ContainerID: "c1", IfName: "eth0"}, {ContainerID: "c2"}})
	for _, tt := range []struct {
		owner Attachment
		keep  bool
	}{
		{Attachment{ContainerID: "c1", IfName: "eth0"}, true},
		{Attachment{ContainerID: "c1", IfName: "eth0", Network: "blue"}, true},
		{Attachment{ContainerID: "c1", IfName: "eth1"}, false},
		{Attachment{ContainerID: "c1"}, true},                                 // legacy file of a live container
		{Attachment{ContainerID: "c3"}, false},                                // legacy file of a dead one
		{Attachment{ContainerID: "c2", IfName: "net1"}, true},                 // listed without ifname: whole container
		{Attachment{ContainerID: "c9", IfName: "eth0", Network: "red"}, true}, // another network's, in a shared pool
		{Attachment{ContainerID: "c9", IfName: "eth0", Network: "blue"}, false},
		{Attachment{ContainerID: "_docker", IfName: "ep1"}, true}, // not a CNI attachment
	} {
		if got := k.Keeps(tt.owner); got != tt.keep {
			t.Errorf("Keeps(%+v) = %v, want %v", tt.owner, got, tt.keep)
		}
	}
	if all := NewKeepSet("", nil); all.Keeps(Attachment{ContainerID: "c9", IfName: "eth0", Network: "red"}) {
		t.Error("a pool collected as a whole keeps another network's reservation")
	}
}
