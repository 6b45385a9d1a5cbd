// Package dapools is ipam-da-pools: an allocator that hands out one address
// per selected pool (pool mode, prevResult.pools from a selector) or per
// range set (standalone, a drop-in for upstream host-local), on top of the
// allocation engine of internal/alloc, with its state in host-local's
// state directories (internal/hostlocal; the layout is
// docs/state-on-disk.md).
package dapools

import (
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Name is the personality's name.
const Name = "ipam-da-pools"

// Personality returns ipam-da-pools.
func Personality() plugin.Personality { return PersonalityWith(nil) }

// PersonalityWith is ipam-da-pools whose writes faults may stop part-way:
// the store contract's crashes, through the real commands.
func PersonalityWith(faults *hostlocal.Faults) plugin.Personality {
	k := commands{faults: faults}
	return ipamconf.Personality(Name, "allocates one address per selected pool (or range set: a drop-in host-local) from local files under flock",
		plugin.IPAMFuncs(k.cmdAdd, k.cmdDel, k.cmdCheck, k.cmdGC, k.cmdStatus), validate)
}

// commands are ipam-da-pools' CNI commands.
type commands struct{ faults *hostlocal.Faults }

// parse is parseConfig of req, with the commands' faults.
func (k commands) parse(req *plugin.Request, needRanges bool) (*config, error) {
	return parseConfig(req.Conf, req.CNIArgs, needRanges, k.faults)
}

// validate is ADD's parse without the disk: standalone (ipam.type is this
// personality) needs ranges; inside a chain the pools arrive later, in
// prevResult, so only what the config itself says can be checked.
func validate(conf *netconf.Envelope) error {
	standalone, err := ipamconf.Standalone(conf, Name)
	if err != nil {
		return err
	}
	c, err := parseConfig(conf, nil, standalone, nil)
	if err != nil {
		return err
	}
	_, err = c.Targets()
	return err
}
