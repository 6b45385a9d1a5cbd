package etcdadmin

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
)

// Admin reads and releases claims directly.
type Admin struct{ st *etcdstore.Operator }

// Config is how an operator reaches etcd (etcdstore.Access). It is this
// package's own type so that it needs nothing of the operators'
// commands; the full flavour's main converts their flags.
type Config = etcdstore.Access

// New validates c exactly as ipam.etcd is validated.
func New(c Config) (*Admin, error) {
	st, err := etcdstore.OpenOperator(c)
	if err != nil {
		return nil, err
	}
	return &Admin{st: st}, nil
}

// Release frees addr in scope as the engine plans it (alloc.PlanRelease)
// over the claim read: refused when it is not claimed or when container
// (and ifname, and node) are given and do not match the attachment it
// releases. dryRun plans and returns the lease without changing
// anything.
func (a *Admin) Release(addr netip.Addr, s alloc.Scope, container, ifname, node string, dryRun bool) (Lease, error) {
	c, err := a.st.Release(addr, s, container, ifname, node, dryRun)
	return Lease{Claim: c}, err
}

// ReleaseHold frees sticky key's holds for ifname (every interface when
// "") in scope s now, whatever their expiry: each held address is freed
// (its hold key and claim, each at the revision read). Which, and when it
// refuses, is the engine's rule for every store (alloc.PlanRelease). It
// returns what it released.
func (a *Admin) ReleaseHold(key, ifname string, s alloc.Scope, dryRun bool) ([]Lease, error) {
	cs, err := a.st.ReleaseHold(key, ifname, s, dryRun)
	return leases(cs), err
}

// Node is a node as its machine last reported to etcd.
type Node = etcdstore.Node

// Nodes lists the nodes that have a machine identity in etcd (every node
// whose ADD, DEL, GC or STATUS ran since they were introduced), by name.
func (a *Admin) Nodes() ([]Node, error) { return a.st.Nodes() }

// CheckGone refuses to treat node as gone for good while it was seen alive
// within deadAfter: its runtime may still DEL and GC, and its live
// containers still use the addresses that an operator's GC would free.
func (a *Admin) CheckGone(node string, deadAfter time.Duration) error {
	nodes, err := a.Nodes()
	if err != nil {
		return err
	}
	now := a.st.Now()
	for _, n := range nodes {
		if n.Name == node && now.Sub(n.LastSeen) < deadAfter {
			return fmt.Errorf("node %s (host %q) was seen alive %s ago, less than --dead-after %s: it may still use its addresses; wait, or pass --force if it is gone for good",
				node, n.Hostname, now.Sub(n.LastSeen).Round(time.Second), deadAfter)
		}
	}
	return nil
}

// ScopeState is what `cniplugins-full pools --etcd` counts in one scope.
type ScopeState = etcdstore.ScopeState

// ScopeStates reads each scope's claims and exhaustion marks, and in a
// pool the tenants its addresses count for: reads only, as `leases` does.
func (a *Admin) ScopeStates(scopes []alloc.Scope) ([]ScopeState, error) {
	return a.st.ScopeStates(scopes)
}
