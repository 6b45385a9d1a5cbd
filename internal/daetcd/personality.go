// Package daetcd is ipam-da-etcd: the allocation engine of internal/alloc
// (ipam-da-pools' inputs and rules) with its state in an etcd cluster
// instead of local files, so that hosts sharing one subnet (macvlan or
// ipvlan on a LAN, overlays, routed pod networks) never hand out one
// address twice. Same inputs as ipam-da-pools; one key per address,
// claimed by a create-if-absent transaction; no lock, no lease on a
// claim, no per-pool document. This package is the CNI personality only:
// it parses the request and calls the store (internal/etcdstore), which
// holds everything that reads and writes etcd. It is part of the full
// flavour only: the store links net/http.
package daetcd

import (
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Name is the personality's name.
const Name = "ipam-da-etcd"

// Personality returns ipam-da-etcd.
func Personality() plugin.Personality {
	return ipamconf.Personality(Name, "allocates one address per selected pool (or range set) from an etcd cluster shared by many hosts",
		plugin.IPAMFuncs(cmdAdd, cmdDel, cmdCheck, cmdGC, cmdStatus), validate)
}

// validate is ADD's parse without etcd, the disk or the host name:
// ipam.etcd, then everything the engine would check.
func validate(conf *netconf.Envelope) error {
	if err := etcdstore.CheckConfig(conf); err != nil {
		return err
	}
	if _, err := ipamconf.StickyConf(conf); err != nil {
		return err
	}
	standalone, err := ipamconf.Standalone(conf, Name)
	if err != nil {
		return err
	}
	c, err := ipamconf.Parse(conf, nil, standalone)
	if err != nil {
		return err
	}
	if standalone || c.PoolMode() {
		var ts []alloc.Target
		if ts, err = c.AddTargets(); err == nil {
			err = alloc.ResolveChains(ts)
		}
	}
	return err
}
