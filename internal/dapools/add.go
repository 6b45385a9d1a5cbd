package dapools

import (
	"net"
	"net/netip"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdAdd is all or nothing: every target gets an address, or whatever
// this ADD reserved is released before the error is returned.
func cmdAdd(req *plugin.Request) (types.Result, error) {
	c, targets, err := load(req)
	if err != nil {
		return nil, err
	}
	if err := assignRequests(targets, c.requested); err != nil {
		return nil, err
	}
	warnUnusable(req.Log, targets)
	dns, err := readResolvConf(c.resolvConf)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(targets))
	for i, t := range targets {
		dirs[i] = t.dir
	}
	st, err := openStores(dirs, c.lockTimeout)
	if err != nil {
		return nil, err
	}
	att := c.attachment(req)
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion, Routes: c.routes, DNS: dns}
	var u undo
	for _, t := range targets {
		err := u.saveCursor(st, t)
		var addr netip.Prefix
		var gw netip.Addr
		if err == nil {
			addr, gw, err = st.allocator(t.dir).Excluding(t.exclude).Allocate(att, t.rangeID, t.set, t.requested, t.label)
		}
		if err != nil {
			u.run(st, att, req.Log)
			st.closeLogged(req.Log)
			return nil, err
		}
		u.reservedIn(t.dir, addr.Addr())
		res.IPs = append(res.IPs, ipConfig(addr, gw))
		req.Log.Debug("allocated", logging.String("target", t.label), logging.Stringer("address", addr))
	}
	st.closeLogged(req.Log)
	return res, nil
}

// warnUnusable tells the operator, once per ADD, about ranges whose
// config includes the network or IPv4 broadcast address: host-local hands
// them out, ipam-da-pools never does.
func warnUnusable(log *logging.Logger, targets []target) {
	var notes []string
	for _, t := range targets {
		for _, r := range t.set {
			if w := r.Warning(); w != "" {
				notes = append(notes, t.label+": "+w)
			}
		}
	}
	if len(notes) > 0 {
		log.Warn("range includes an address that is never handed out", logging.String("ranges", strings.Join(notes, "; ")))
	}
}

func ipConfig(addr netip.Prefix, gw netip.Addr) *current.IPConfig {
	ipc := &current.IPConfig{Address: net.IPNet{
		IP:   net.IP(addr.Addr().AsSlice()),
		Mask: net.CIDRMask(addr.Bits(), addr.Addr().BitLen()),
	}}
	if gw.IsValid() {
		ipc.Gateway = net.IP(gw.AsSlice())
	}
	return ipc
}

// attachment is who holds the addresses. In pool mode it also names the
// network, because a pool directory is shared between networks.
func (c *config) attachment(req *plugin.Request) hostlocal.Attachment {
	a := hostlocal.Attachment{ContainerID: req.Args.ContainerID, IfName: req.Args.IfName}
	if c.pools != nil {
		a.Network = c.network
	}
	return a
}
