// Package dapools is ipam-da-pools: an allocator that hands out one address
// per selected pool (pool mode, prevResult.pools from a selector) or per
// range set (standalone, a drop-in for upstream host-local), on top of the
// allocation engine of internal/alloc, with its state in host-local's
// state directories (internal/hostlocal; the layout is
// docs/state-on-disk.md).
package dapools

import (
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Name is the personality's name.
const Name = "ipam-da-pools"

// Personality returns ipam-da-pools; faults, nil but in the store
// contract's crashes, may stop its writes part-way.
func Personality(faults *hostlocal.Faults) plugin.Personality {
	open := func(req *plugin.Request, c *alloc.Config) (ipamconf.Store, error) {
		dir, timeout, err := OwnKeys(req.Conf)
		if err != nil {
			return nil, err
		}
		return &config{Config: c, req: req, att: c.Attachment(req.Args.ContainerID, req.Args.IfName),
			Place: Place{DataDir: dir, LockTimeout: timeout, Faults: faults}}, nil
	}
	return ipamconf.Personality(Name, "allocates one address per selected pool (or range set: a drop-in host-local) from local files under flock",
		open, func(conf *netconf.Envelope) error {
			_, _, err := OwnKeys(conf)
			return err
		})
}

// Del runs the engine's DEL (alloc.Config.LockedDel) over the state
// directories this config touches; prevResult's addresses are hints that
// send it straight to their files.
func (c *config) Del(hints []netip.Addr, keyed *alloc.Keyed) error {
	p, err := c.lock("", c.Scopes())
	if err != nil {
		return err
	}
	err = c.LockedDel(p, c.att, keyed, hints, c.req.Now, c.req.Log)
	p.closeLogged(c.req.Log)
	return err
}

// Exhausted needs no scan: the exhaustion marks live beside the index
// and are trusted only while the index is (another writer's release
// invalidates them).
func (c *config) Exhausted([]alloc.Target) (func(alloc.Target) (bool, error), error) {
	return func(p alloc.Target) (bool, error) {
		marks, err := hostlocal.Exhausted(c.dir(p.Scope))
		return slices.Contains(marks, p.RangeID), err
	}, nil
}
