package dsselect

import "net/netip"

// hostNet is what ipam-ds-iface reads about the network namespace it runs
// in: the real one is netlink (iface_netlink.go); tests use a fake, so the
// pool derivation is table-tested without touching a host.
type hostNet interface {
	// LinkByName returns the link called name; ok is false when there is
	// none.
	LinkByName(name string) (l hostLink, ok bool, err error)
	// LinkByIndex is LinkByName for a route's output interface.
	LinkByIndex(index int) (l hostLink, ok bool, err error)
	// Addrs lists the link's addresses, in the kernel's order.
	Addrs(l hostLink) ([]hostAddr, error)
	// DefaultRoutes lists the main table's default routes of both
	// families, one entry per next hop.
	DefaultRoutes() ([]hostRoute, error)
}

type hostLink struct {
	Index int
	Name  string
}

// hostAddr is one address of a link with its on-link prefix length
// (192.168.1.10/24).
type hostAddr struct {
	Prefix netip.Prefix
	Global bool // scope global: not link-local, host or site scope
}

// hostRoute is one next hop of a default route.
type hostRoute struct {
	Family    int // 4 or 6
	LinkIndex int
	Gateway   netip.Addr // invalid for a route without a next hop (on-link default)
	Metric    int
}
