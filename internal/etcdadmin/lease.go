package etcdadmin

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/etcdstore"
)

// Lease is one claim as an operator sees it. A failed ADD's marker has no
// Address.
type Lease struct {
	etcdstore.Claim
	// Tenant is the quota's tenant the address counts for ("" none).
	Tenant string
}

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
	claims, err := a.st.Claims(f.Node)
	if err != nil {
		return nil, err
	}
	holds, err := a.st.Holds()
	if err != nil {
		return nil, err
	}
	var sel []etcdstore.Claim
	for _, c := range append(holds, claims...) {
		if f.matches(c) {
			sel = append(sel, c)
		}
	}
	tenants, err := a.st.Tenants(sel)
	if err != nil {
		return nil, err
	}
	out := leases(sel)
	for i := range out {
		out[i].Tenant = tenants[i]
	}
	sortLeases(out)
	return out, nil
}

// ScopeName is "pool P" or "network N".
func (l Lease) ScopeName() string {
	if l.Scope.Pool != "" {
		return "pool " + l.Scope.Pool
	}
	return "network " + l.Scope.Network
}

func leases(cs []etcdstore.Claim) []Lease {
	if cs == nil {
		return nil
	}
	out := make([]Lease, len(cs))
	for i, c := range cs {
		out[i] = Lease{Claim: c}
	}
	return out
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
