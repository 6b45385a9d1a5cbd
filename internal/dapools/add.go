package dapools

import (
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdAdd is all or nothing: every target gets an address, or whatever
// this ADD reserved is released before the error is returned.
//
// An ADD whose targets head overflow chains first tries with the heads
// alone (lockHeads) where the engine allows it (alloc.HeadsSuffice); the
// quota's count needs no other pool's lock either, since the tenant's
// lock lets it read them without. What needs the whole chain
// (alloc.ErrWholeChain) undoes the attempt and runs the ADD again with
// every pool of the chains locked; a count at the quota that is not
// exact (some pool counted without its lock) runs it with every pool the
// quota counts in locked too, since only such a count may refuse.
func (k commands) cmdAdd(req *plugin.Request) (types.Result, error) {
	c, err := k.parse(req, true)
	if err != nil {
		return nil, err
	}
	targets, err := c.AddTargets()
	if err != nil {
		return nil, err
	}
	warnUnusable(req.Log, targets)
	res, err := c.NewResult()
	if err != nil {
		return nil, err
	}
	a := adder{config: c, targets: targets, att: c.attachment(req), log: req.Log, now: req.Now}
	first := lockChains
	if alloc.HeadsSuffice(targets, c.stickyKey) {
		first = lockHeads
	}
	ips, err := a.add(first)
	if errors.Is(err, alloc.ErrWholeChain) {
		ips, err = a.add(lockChains)
	}
	if errors.Is(err, alloc.ErrWholeCount) {
		ips, err = a.add(lockCounted)
	}
	if err != nil {
		return nil, err
	}
	res.IPs = ips
	return res, nil
}

// lockMode is which pools an ADD locks.
type lockMode int

const (
	lockHeads   lockMode = iota // the first pool of each chain
	lockChains                  // every pool of the chains
	lockCounted                 // and every pool the quota counts in
)

// adder is one ADD's allocation, run with the heads of its chains alone
// or with every pool locked.
type adder struct {
	*config
	targets []alloc.Target
	att     alloc.Attachment
	log     *logging.Logger
	now     time.Time
}

// add runs the ADD once, with the pools mode says locked
// (alloc.ErrWholeChain or alloc.ErrWholeCount when that is not enough,
// the attempt undone).
func (a *adder) add(mode lockMode) ([]*current.IPConfig, error) {
	headsOnly := mode == lockHeads
	var locked, counted []string // the directories to lock; to count the tenant in
	for _, t := range a.targets {
		for i, ch := range t.Chain() {
			if i == 0 || !headsOnly {
				locked = append(locked, a.dir(ch.Scope))
			}
		}
	}
	tenant := ""
	if a.Quota != nil {
		tenant = a.Quota.Tenant
	}
	for _, s := range alloc.CountScopes(a.Quota, a.targets) {
		counted = append(counted, a.dir(s))
		if mode == lockCounted {
			locked = append(locked, a.dir(s))
		}
	}
	st, err := openStoresAs(PoolsDir(a.dataDir), tenant, locked, a.lockTimeout, a.faults)
	if err != nil {
		return nil, err
	}
	defer st.closeLogged(a.log)
	var u alloc.Undo
	have := func(s alloc.Scope) bool { return st.disks[a.dir(s)] != nil }
	locateIn := func(t alloc.Target) (alloc.Presence, error) {
		return alloc.LocateIn(st.disks[a.dir(t.Scope)], a.att, t, a.stickyKey, a.now)
	}
	allocateIn := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
		d := st.disks[a.dir(t.Scope)]
		if err := u.Cursor(d, t.RangeID); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		if a.stickyKey != "" {
			return alloc.AllocateKeyed(d, a.att, t, a.keyed(), a.now, &u)
		}
		addr, gw, err := t.Allocator(d).Allocate(a.att, t.RangeID, t.Set, t.Requested, t.Label)
		if err == nil {
			u.Reserved(d, addr.Addr())
		}
		return addr, gw, err
	}
	inUse := func() (int, error) {
		n, exact, err := st.tenantAddrs(a.Quota, counted)
		if err != nil {
			return n, err
		}
		return alloc.PartialCount(a.Quota, n, exact)
	}
	for _, d := range st.disks {
		d.ForTenant(tenant)
	}
	var ips []*current.IPConfig
	for _, t := range a.targets {
		locate, allocate := alloc.Spilling(t, a.att, st.disks[a.dir(t.Scope)], have, locateIn, allocateIn)
		var addr netip.Prefix
		var gw netip.Addr
		var used alloc.Target
		if _, err = alloc.QuotaGate(a.Quota, t, a.stickyKey, a.migration, locate, inUse); err != nil {
			break
		}
		if addr, gw, used, err = alloc.AllocateOverflow(t, a.att, locate, allocate); err != nil {
			break
		}
		ips = append(ips, alloc.IPConfig(addr, gw))
		a.log.Debug("allocated", logging.String("target", used.Label), logging.Stringer("address", addr))
	}
	if err != nil {
		// The ADD's own error is what the runtime must see.
		if uerr := u.Run(a.att); uerr != nil {
			a.log.Error("rollback failed", logging.Error(uerr))
		}
		return nil, err
	}
	return ips, nil
}

// warnUnusable tells the operator, once per ADD, about ranges whose
// config includes the network or IPv4 broadcast address: host-local hands
// them out, ipam-da-pools never does.
func warnUnusable(log *logging.Logger, targets []alloc.Target) {
	var notes []string
	for _, t := range targets {
		for _, r := range t.Set {
			if w := r.Warning(); w != "" {
				notes = append(notes, t.Label+": "+w)
			}
		}
	}
	if len(notes) > 0 {
		log.Warn("range includes an address that is never handed out", logging.String("ranges", strings.Join(notes, "; ")))
	}
}
