package dapools

import (
	"net/netip"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdAdd is all or nothing: every target gets an address, or whatever
// this ADD reserved is released before the error is returned.
func cmdAdd(req *plugin.Request) (types.Result, error) {
	c, err := parseConfig(req.Conf, req.CNIArgs, true)
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
	var dirs []string
	for _, t := range targets {
		for _, ch := range t.Chain() {
			dirs = append(dirs, c.dir(ch.Scope))
		}
	}
	st, err := openStores(dirs, c.lockTimeout)
	if err != nil {
		return nil, err
	}
	att := c.attachment(req)
	now := time.Now()
	var u undo
	locate := func(t alloc.Target) (alloc.Presence, error) {
		return alloc.LocateIn(st.disks[c.dir(t.Scope)], att, t, c.stickyKey, now)
	}
	allocate := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
		d := st.disks[c.dir(t.Scope)]
		if err := u.saveCursor(d, t.RangeID); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		if c.stickyKey != "" {
			return alloc.AllocateKeyed(d, att, t, c.keyed(), now, &u.Undo)
		}
		addr, gw, err := t.Allocator(d).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
		if err == nil {
			u.Reserved(d, addr.Addr())
		}
		return addr, gw, err
	}
	inUse := func() (int, error) { return st.tenantAddrs(c.Quota) }
	for _, d := range st.disks {
		if c.Quota != nil {
			d.ForTenant(c.Quota.Tenant)
		}
	}
	for _, t := range targets {
		var addr netip.Prefix
		var gw netip.Addr
		var used alloc.Target
		_, err := alloc.QuotaGate(c.Quota, t, c.stickyKey, locate, inUse)
		if err == nil {
			addr, gw, used, err = alloc.AllocateOverflow(t, att, locate, allocate)
		}
		if err != nil {
			u.run(att, req.Log)
			st.closeLogged(req.Log)
			return nil, err
		}
		res.IPs = append(res.IPs, alloc.IPConfig(addr, gw))
		req.Log.Debug("allocated", logging.String("target", used.Label), logging.Stringer("address", addr))
	}
	st.closeLogged(req.Log)
	return res, nil
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
