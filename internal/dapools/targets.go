package dapools

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// target is one address to hand out: a range set in a state directory.
type target struct {
	label     string // names the pool or range set in errors
	dir       string
	rangeID   int // the N of last_reserved_ip.N
	set       addrspace.RangeSet
	requested netip.Addr
	exclude   addrspace.Exclusions // never handed out (pool mode only)
}

// load parses the config and lists the targets: how ADD, CHECK and
// STATUS begin.
func load(req *plugin.Request) (*config, []target, error) {
	c, err := parseConfig(req.Conf, req.CNIArgs, true)
	if err != nil {
		return nil, nil, err
	}
	ts, err := c.targets()
	return c, ts, err
}

// networkDir is host-local's state directory for the network.
func (c *config) networkDir() string { return filepath.Join(c.dataDir, c.network) }

// poolDir is the state directory of a pool, shared by every network that
// selects it, so no two of them can hold one address.
func (c *config) poolDir(name string) string { return PoolDir(c.dataDir, name) }

// targets lists, in order, what an ADD must allocate: one address per pool
// in pool mode, one per range set standalone.
func (c *config) targets() ([]target, error) {
	var out []target
	if c.pools == nil {
		for i, rs := range c.rangeSets {
			out = append(out, target{label: fmt.Sprintf("range set %d (%s)", i, rs), dir: c.networkDir(), rangeID: i, set: rs})
		}
		return out, nil
	}
	for i, p := range c.pools {
		field := fmt.Sprintf("prevResult.pools[%d]", i)
		src, ok, err := poolSource(p, field, c.poolDefs)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, cnierr.New(cnierr.CodeInvalidConfig, "unknown pool: no inline ranges and no ipam.poolDefinitions entry", "%s.name=%s", field, p.Name)
		}
		req, err := p.Requested(field)
		if err != nil {
			return nil, err
		}
		out = append(out, target{label: "pool " + p.Name, dir: c.poolDir(p.Name), set: src.Set, requested: req, exclude: src.Exclude})
	}
	return out, nil
}

// dirs lists the state directories this config touches, without needing
// ranges: DEL and GC must work even when the ranges have changed since.
func (c *config) dirs() []string {
	if c.pools == nil {
		return []string{c.networkDir()}
	}
	out := make([]string, len(c.pools))
	for i, p := range c.pools {
		out[i] = c.poolDir(p.Name)
	}
	return out
}
