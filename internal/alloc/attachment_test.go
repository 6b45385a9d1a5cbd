package alloc_test

import (
	"net/netip"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
)

// A pool directory shared by two networks: the allocator sees one
// attachment whatever network it was recorded under.
func TestNetworkTagIsNotIdentity(t *testing.T) {
	forEachStore(t, func(t *testing.T, h harness) {
		rs := alloctest.Small(t)
		a := alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "net-a"}
		ip := mustAlloc(t, h, a, rs, "")
		h.with(t, func(al *alloc.Allocator, s alloc.Lister) {
			if _, _, err := al.Allocate(alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, 0, rs, netip.Addr{}, "r"); err == nil {
				t.Errorf("same attachment under another network got a second address")
			}
			owner, _, _ := s.Owner(ip)
			if owner.Network != "net-a" {
				t.Errorf("owner %+v lost its network", owner)
			}
			if err := alloc.Check(s, alloc.Attachment{ContainerID: "c", IfName: "eth0"}, []netip.Addr{ip}); err != nil {
				t.Error(err)
			}
			// The same (container, ifname) wrongly reused on another
			// network must not free net-a's address (its rollback DEL).
			if rel, err := alloc.Release(s, alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, []netip.Addr{ip}); err != nil || len(rel) != 0 {
				t.Errorf("net-b released net-a's address: %v, %v", rel, err)
			}
			if err := alloc.Check(s, alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "net-b"}, []netip.Addr{ip}); err == nil {
				t.Errorf("CHECK from net-b accepted net-a's address")
			}
			rel, err := alloc.Release(s, alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "net-a"}, nil)
			if err != nil || len(rel) != 1 {
				t.Errorf("release = %v, %v", rel, err)
			}
		})
	})
}

// CHECK's verdict on one address, as every store asks it.
func TestAttachmentChecks(t *testing.T) {
	a := alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "blue"}
	none := alloc.Attachment{}
	for _, tt := range []struct {
		name          string
		owner, second alloc.Attachment
		want          bool
	}{
		{"its own", a, none, true},
		{"its own, recorded without a network", a.Key(), none, true},
		{"its container's legacy reservation", a.Legacy(), none, true},
		{"another network's", alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "red"}, none, false},
		{"another interface's", alloc.Attachment{ContainerID: "c", IfName: "eth1", Network: "blue"}, none, false},
		{"another container's", alloc.Attachment{ContainerID: "d", IfName: "eth0", Network: "blue"}, none, false},
		{"its share as a migration target", alloc.Attachment{ContainerID: "src", IfName: "eth0", Network: "blue"}, a, true},
		{"another target's share", alloc.Attachment{ContainerID: "src", IfName: "eth0", Network: "blue"}, alloc.Attachment{ContainerID: "d", IfName: "eth0", Network: "blue"}, false},
		{"no owner here", none, none, false},
	} {
		if got := a.Checks("", tt.owner, "", tt.second, ""); got != tt.want {
			t.Errorf("%s: Checks(%+v, %+v) = %v, want %v", tt.name, tt.owner, tt.second, got, tt.want)
		}
	}
}

// CHECK's verdict on one address in a store with several nodes: a
// container ID names one container only on its node, so an owner or a
// share recorded on another node is not the asking attachment's (code 3).
func TestAttachmentChecksOnNodes(t *testing.T) {
	a := alloc.Attachment{ContainerID: "c", IfName: "eth0", Network: "blue"}
	src := alloc.Attachment{ContainerID: "src", IfName: "eth0", Network: "blue"}
	none := alloc.Attachment{}
	for _, tt := range []struct {
		name       string
		node       string
		owner      alloc.Attachment
		ownerNode  string
		second     alloc.Attachment
		secondNode string
		want       bool
	}{
		{"its own, on its node", "n1", a, "n1", none, "", true},
		{"its own ID and interface, on another node", "n1", a, "n2", none, "", false},
		{"its container's legacy reservation, on another node", "n1", a.Legacy(), "n2", none, "", false},
		{"its share, on its node", "n1", src, "n2", a, "n1", true},
		{"its ID's share, on another node", "n1", src, "n1", a, "n2", false},
		{"its own, in a store with one node", "", a, "", none, "", true},
		{"its share, in a store with one node", "", src, "", a, "", true},
		{"a node-less record, asked on a node", "n1", a, "", none, "", false},
	} {
		if got := a.Checks(tt.node, tt.owner, tt.ownerNode, tt.second, tt.secondNode); got != tt.want {
			t.Errorf("%s: Checks(%q, %+v, %q, %+v, %q) = %v, want %v", tt.name, tt.node, tt.owner, tt.ownerNode, tt.second, tt.secondNode, got, tt.want)
		}
	}
}

func TestAttachmentKind(t *testing.T) {
	for _, tt := range []struct {
		a    alloc.Attachment
		want string
	}{
		{alloc.Attachment{ContainerID: "c1", IfName: "eth0"}, "cni"},
		{alloc.Attachment{ContainerID: "c1", IfName: "eth0", Network: "blue"}, "cni"},
		{alloc.Attachment{ContainerID: "c1"}, "legacy"},
		{alloc.Attachment{ContainerID: "_docker", IfName: "0123abcd"}, "docker"},
		{alloc.Attachment{ContainerID: "_docker"}, "docker"},
		{alloc.Attachment{ContainerID: "_", IfName: "x"}, "unknown"},
	} {
		if got := tt.a.Kind(); got != tt.want {
			t.Errorf("%+v.Kind() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

func TestKeepSet(t *testing.T) {
	k := alloc.NewKeepSet("blue", []alloc.Attachment{{ContainerID: "c1", IfName: "eth0"}, {ContainerID: "c2"}})
	for _, tt := range []struct {
		owner alloc.Attachment
		keep  bool
	}{
		{alloc.Attachment{ContainerID: "c1", IfName: "eth0"}, true},
		{alloc.Attachment{ContainerID: "c1", IfName: "eth0", Network: "blue"}, true},
		{alloc.Attachment{ContainerID: "c1", IfName: "eth1"}, false},
		{alloc.Attachment{ContainerID: "c1"}, true},                                 // legacy file of a live container
		{alloc.Attachment{ContainerID: "c3"}, false},                                // legacy file of a dead one
		{alloc.Attachment{ContainerID: "c2", IfName: "net1"}, true},                 // listed without ifname: whole container
		{alloc.Attachment{ContainerID: "c9", IfName: "eth0", Network: "red"}, true}, // another network's, in a shared pool
		{alloc.Attachment{ContainerID: "c9", IfName: "eth0", Network: "blue"}, false},
		{alloc.Attachment{ContainerID: "_docker", IfName: "ep1"}, true}, // not a CNI attachment
		{alloc.Attachment{IfName: "eth0"}, false},                       // no container ID: no valid attachment names it (host-local frees it too)
	} {
		if got := k.Keeps(tt.owner); got != tt.keep {
			t.Errorf("Keeps(%+v) = %v, want %v", tt.owner, got, tt.keep)
		}
	}
	if all := alloc.NewKeepSet("", nil); all.Keeps(alloc.Attachment{ContainerID: "c9", IfName: "eth0", Network: "red"}) {
		t.Error("a pool collected as a whole keeps another network's reservation")
	}
}
