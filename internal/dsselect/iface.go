package dsselect

import (
	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// IfaceName is ipam-ds-iface's personality name.
const IfaceName = "ipam-ds-iface"

// Iface returns ipam-ds-iface: it selects, per address family, the subnet
// of a host interface (for macvlan, ipvlan and host-device networks, whose
// containers sit on the host's own LAN), read through netlink in the
// network namespace the plugin runs in.
func Iface() plugin.Personality { return ifaceWith(netlinkHost{}) }

// ifaceWith is Iface reading h; tests pass a fake host.
//
// ADD, CHECK and STATUS derive the pools from the host. DEL and GC do
// not read the host at all: they name every pool an ADD could have
// chosen (their union), by name only. The allocator's DEL and GC
// need nothing but the names, and by the time of a DEL the link may have
// lost its address, changed subnet or gone, none of which may keep an
// attachment's addresses from being freed.
func ifaceWith(h hostNet) plugin.Personality {
	fromHost := func(req *plugin.Request) (pool.Selection, error) {
		s, err := parseIface(req.Conf)
		if err != nil {
			return pool.Selection{}, err
		}
		return poolsOnly(derive(h, s))
	}
	byName := func(req *plugin.Request) (pool.Selection, error) {
		s, err := parseIface(req.Conf)
		if err != nil {
			return pool.Selection{}, err
		}
		return pool.Selection{Pools: s.every()}, nil
	}
	funcs := selectorFuncs(fromHost, byName, fromHost)
	funcs.Status = statusNotAvailable(funcs.Status)
	return plugin.Personality{
		Name:     IfaceName,
		Summary:  "selects the subnet of a host interface (read with netlink) as the pool, per address family",
		Funcs:    funcs,
		ArgKeys:  func(*netconf.Envelope) ([]string, error) { return chainArgKeys(), nil },
		Validate: parsesWith(parseIface),
	}
}

// statusNotAvailable: a link without an address (DHCP pending, link down)
// makes every ADD fail with 11, which for STATUS is "plugin not
// available" (50), with the same details.
func statusNotAvailable(status plugin.Func) plugin.Func {
	return func(req *plugin.Request) (types.Result, error) {
		res, err := status(req)
		if e := cnierr.As(err); e != nil && e.Code == cnierr.CodeTryAgainLater {
			return nil, cnierr.Wrap(cnierr.New(cnierr.CodeNotAvailable, e.Msg, "%s", e.Details), err)
		}
		return res, err
	}
}
