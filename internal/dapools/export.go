package dapools

import (
	"net/netip"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// This file is ipam-da-pools' configuration as other allocators see it:
// ipam-da-etcd takes exactly the same inputs (pool mode, standalone
// host-local keys, requested addresses) and keeps its state elsewhere, so
// it parses them here rather than with a copy of this package's rules.

// Parsed is a validated ipam-da-pools configuration.
type Parsed struct{ c *config }

// Parse validates conf and the CNI_ARGS as ipam-da-pools' ADD (needRanges)
// or DEL and GC (ranges not needed) would.
func Parse(conf *netconf.Envelope, cniArgs []netconf.CNIArg, needRanges bool) (Parsed, error) {
	c, err := parseConfig(conf, cniArgs, needRanges)
	return Parsed{c}, err
}

// Scope is where an address lives: a pool (pool mode) or, standalone, the
// network itself. Exactly one field is set.
type Scope struct{ Pool, Network string }

// Network is the network name.
func (p Parsed) Network() string { return p.c.network }

// PoolMode reports whether a selector's prevResult.pools drives the
// allocation.
func (p Parsed) PoolMode() bool { return p.c.pools != nil }

// Scopes lists the scopes the configuration touches, as DEL and GC need
// them: no ranges required.
func (p Parsed) Scopes() []Scope {
	if p.c.pools == nil {
		return []Scope{{Network: p.c.network}}
	}
	out := make([]Scope, len(p.c.pools))
	for i, pl := range p.c.pools {
		out[i] = Scope{Pool: pl.Name}
	}
	return out
}

// DefinedPools lists, sorted, the pools of ipam.poolDefinitions, which
// STATUS reports on whether a selector names them or not.
func (p Parsed) DefinedPools() []string { return p.c.definedPools() }

// Target is one address an ADD must hand out.
type Target struct {
	Label     string // names the pool or range set in errors
	Scope     Scope
	RangeID   int // the range set's index (standalone) or 0 (a pool)
	Set       addrspace.RangeSet
	Requested netip.Addr
	t         target
}

// Targets lists, in order, what an ADD allocates, with the requested
// addresses assigned to them (101 for one that fits no target).
func (p Parsed) Targets() ([]Target, error) {
	ts, err := p.c.targets()
	if err != nil {
		return nil, err
	}
	if err := assignRequests(ts, p.c.requested); err != nil {
		return nil, err
	}
	scopes := p.Scopes()
	out := make([]Target, len(ts))
	for i, t := range ts {
		scope := scopes[0]
		if p.c.pools != nil {
			scope = scopes[i] // one target per pool, in pool order
		}
		out[i] = Target{Label: t.label, Scope: scope, RangeID: t.rangeID, Set: t.set, Requested: t.requested, t: t}
	}
	return out, nil
}

// Allocator is the host-local allocator over store with everything the
// target asks of it (the addresses it must never hand out included), so
// that another store allocates by exactly ipam-da-pools' rules.
func (t Target) Allocator(store hostlocal.Store) *hostlocal.Allocator {
	return hostlocal.NewAllocator(store).Excluding(t.t.exclude)
}

// NewResult is an ADD result with the configuration's routes and DNS and
// no addresses yet.
func (p Parsed) NewResult() (*current.Result, error) {
	dns, err := readResolvConf(p.c.resolvConf)
	if err != nil {
		return nil, err
	}
	return &current.Result{CNIVersion: current.ImplementedSpecVersion, Routes: p.c.routes, DNS: dns}, nil
}

// IPConfig is one address of a result.
func IPConfig(addr netip.Prefix, gw netip.Addr) *current.IPConfig { return ipConfig(addr, gw) }

// PrevAddrs are the addresses in conf's prevResult.
func PrevAddrs(conf *netconf.Envelope) ([]netip.Addr, error) {
	prev, err := conf.Result()
	if err != nil || prev == nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(prev.IPs))
	for _, ip := range prev.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}
