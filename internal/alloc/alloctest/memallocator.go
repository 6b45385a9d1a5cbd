package alloctest

import (
	"errors"
	"net/netip"
	"slices"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// MemName is the in-memory allocator's personality name.
const MemName = "ipam-da-mem"

// MemPools is the state of an in-memory allocator: one MemStore per
// scope, as ipam-da-pools keeps one state directory per pool, living
// across the commands run over it. It has no locks: the commands of one
// test run one at a time.
type MemPools struct{ stores map[alloc.Scope]*MemStore }

// NewMemPools returns an allocator state that holds nothing.
func NewMemPools() *MemPools { return &MemPools{stores: map[alloc.Scope]*MemStore{}} }

// Personality is an allocator over p run by the same command driver as
// ipam-da-pools and ipam-da-etcd (ipamconf.Personality), the engine's
// drivers doing the work as over the disk store: its ipam keys are the
// engine's alone, and faults, when set, may stop its writes part-way.
func (p *MemPools) Personality(faults *Faults) plugin.Personality {
	open := func(req *plugin.Request, c *alloc.Config) (ipamconf.Store, error) {
		return memCommand{Config: c, pools: p, req: req, faults: faults}, nil
	}
	return ipamconf.Personality(MemName, "allocates from memory: the engine's contract through the commands",
		open, func(*netconf.Envelope) error { return nil })
}

// store is scope s's MemStore for a command that counts its writes on
// faults and reserves for tenant ("" none), created when s has none.
// Both are set on every access: a MemStore outlives the command (a
// Disk is opened per command), and one command's tenant or crash must
// not reach the next.
func (p *MemPools) store(s alloc.Scope, tenant string, faults *Faults) *MemStore {
	m := p.stores[s]
	if m == nil {
		m = NewMemStore()
		p.stores[s] = m
	}
	m.ForTenant(tenant)
	m.SetFaults(faults)
	return m
}

// memCommand is one command's store over MemPools: the ipamconf.Store
// the driver runs, each command one of the engine's drivers, as
// ipam-da-pools runs them over its state directories.
type memCommand struct {
	*alloc.Config
	pools  *MemPools
	req    *plugin.Request
	faults *Faults
}

var _ ipamconf.Store = memCommand{}

// attachment is the request's attachment (alloc.Config.Attachment).
func (c memCommand) attachment() alloc.Attachment {
	return c.Attachment(c.req.Args.ContainerID, c.req.Args.IfName)
}

func (c memCommand) store(s alloc.Scope) *MemStore { return c.pools.store(s, "", c.faults) }

// Add runs alloc.LockedAdd, each try "locking" the scopes it asks for.
func (c memCommand) Add(targets []alloc.Target, keyed alloc.Keyed) ([]*current.IPConfig, error) {
	add := alloc.LockedAdd{Add: alloc.Add{Targets: targets, Att: c.attachment(), Quota: c.Quota, Keyed: keyed, Log: c.req.Log}, Now: c.req.Now}
	return add.Run(func(tenant string, scopes []alloc.Scope) (alloc.Locked, func(), error) {
		return c.lock(tenant, scopes), func() {}, nil
	})
}

// Del runs alloc.Config.LockedDel over every scope the config covers;
// prevResult's addresses are its hints.
func (c memCommand) Del(hints []netip.Addr, keyed *alloc.Keyed) error {
	return c.LockedDel(c.lock("", c.Scopes()), c.attachment(), keyed, hints, c.req.Now, c.req.Log)
}

// Check runs alloc.CheckScopes over the scopes' MemStores.
func (c memCommand) Check(addrs []netip.Addr, targets []alloc.Target) error {
	return alloc.CheckScopes(addrs, targets, c.attachment(), func(scopes []alloc.Scope, fn func(alloc.Scope, alloc.Ledger) error) error {
		for _, s := range scopes {
			var l alloc.Ledger // nil for a scope with no state: CHECK creates none
			if c.pools.stores[s] != nil {
				l = c.store(s)
			}
			if err := fn(s, l); err != nil {
				return err
			}
		}
		return nil
	})
}

// GC runs alloc.CollectGC in each scope the config covers, then
// alloc.GCSpills (the spill records of the attachments not kept), going
// on after errors,
// as ipam-da-pools' Collect does (a MemStore has no tenant records or
// locks to repair: a reservation's tenant goes with it).
func (c memCommand) GC(valid []alloc.Attachment) error {
	keep := alloc.NewKeepSet(c.Network, valid).Keeps
	var errs []error
	for _, s := range c.Scopes() {
		m := c.store(s)
		_, _, err := alloc.CollectGC(m, keep, c.req.Now)
		_, serr := alloc.GCSpills(m, keep)
		errs = append(errs, err, serr)
	}
	return errors.Join(errs...)
}

// Exhausted reads the marks each ADD that found a range set full left.
func (c memCommand) Exhausted([]alloc.Target) (func(alloc.Target) (bool, error), error) {
	return func(t alloc.Target) (bool, error) {
		m := c.pools.stores[t.Scope] // nil for a scope with no state: STATUS creates none
		return m != nil && slices.Contains(m.Exhausted(), t.RangeID), nil
	}, nil
}

// memLocked is the scopes one try of an ADD, or a DEL, works on.
type memLocked struct {
	pools  *MemPools
	stores map[alloc.Scope]*MemStore
}

// lock is scopes' MemStores, reserving for tenant.
func (c memCommand) lock(tenant string, scopes []alloc.Scope) memLocked {
	l := memLocked{c.pools, map[alloc.Scope]*MemStore{}}
	for _, s := range scopes {
		l.stores[s] = c.pools.store(s, tenant, c.faults)
	}
	return l
}

// Pool implements alloc.Locked.
func (l memLocked) Pool(s alloc.Scope) alloc.LockedPool {
	if m := l.stores[s]; m != nil {
		return m
	}
	return nil
}

// TenantAddrs implements alloc.Locked: every scope's count is exact,
// locked or not, since nothing else writes meanwhile.
func (l memLocked) TenantAddrs(tenant string, scopes []alloc.Scope) (int, bool, error) {
	n := 0
	for _, s := range scopes {
		if m := l.pools.stores[s]; m != nil {
			c, err := m.TenantAddrs(tenant)
			if err != nil {
				return 0, false, err
			}
			n += c
		}
	}
	return n, true, nil
}
