package etcdadmin

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/etcdstore"
)

// Lease is one claim as an operator sees it. A failed ADD's marker has no
// Address.
type Lease = etcdstore.Claim

// Filter selects leases; empty fields match everything.
type Filter struct {
	Node, Network, Pool, Container string
}

// matches is whether f selects l: a hold by the node and container that
// held it last.
func (f Filter) matches(l etcdstore.Claim) bool {
	node, container := l.Node, l.ContainerID
	if l.Held {
		container = l.LastOwner
	}
	return (f.Node == "" || node == f.Node) && (f.Network == "" || l.Network == f.Network) &&
		(f.Pool == "" || l.Scope.Pool == f.Pool) && (f.Container == "" || strings.HasPrefix(container, f.Container))
}

// Leases lists the claims that match f, read from the nodes' index keys
// (one prefix read: one node's, or every node's), and the holds, sorted
// by node, scope and address.
func (a *Admin) Leases(f Filter) ([]Lease, error) {
	claims, err := a.Claims(f.Node)
	if err != nil {
		return nil, err
	}
	holds, err := a.Holds()
	if err != nil {
		return nil, err
	}
	var sel []etcdstore.Claim
	for _, c := range append(holds, claims...) {
		if f.matches(c) {
			sel = append(sel, c)
		}
	}
	if err := a.Tenants(sel); err != nil {
		return nil, err
	}
	sortLeases(sel)
	return sel, nil
}

// sortLeases sorts by node, scope and address.
func sortLeases(ls []Lease) {
	slices.SortFunc(ls, func(x, y Lease) int {
		if c := strings.Compare(x.Node+"\x00"+etcdstore.ScopePath(x.Scope), y.Node+"\x00"+etcdstore.ScopePath(y.Scope)); c != 0 {
			return c
		}
		a, _ := netip.ParseAddr(x.Address) // a marker (no address) sorts first
		b, _ := netip.ParseAddr(y.Address)
		return a.Compare(b)
	})
}
