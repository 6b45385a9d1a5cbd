package dapools

import (
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Layout is where a network configuration keeps its addresses, as
// ipam-da-pools computes it (and upstream host-local, for the standalone
// keys): what the operators' CLI needs to read the state of a network
// without an ADD.
type Layout struct {
	DataDir string
	// NetworkDir is the standalone state directory of the network.
	NetworkDir string
	// RangeSets are the standalone range sets (ipam.ranges and the legacy
	// top-level range), nil when the config has none.
	RangeSets []addrspace.RangeSet
	// PoolDefs are ipam.poolDefinitions.
	PoolDefs map[string]pool.Definition
}

// PoolDir is the state directory of pool name under dataDir.
func PoolDir(dataDir, name string) string { return filepath.Join(dataDir, poolsDir, name) }

// PoolsDir is the directory holding every pool's state directory.
func PoolsDir(dataDir string) string { return filepath.Join(dataDir, poolsDir) }

// DescribeConfig validates conf's ipam section as ADD would (without
// CNI_ARGS or a prevResult) and returns its layout. Range sets are only
// required when pools are not in use, which the caller knows: a config
// with neither ranges nor pools fails its first ADD, not this.
func DescribeConfig(conf *netconf.Envelope) (Layout, error) {
	c, err := parseConfig(conf, nil, false)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{DataDir: c.dataDir, NetworkDir: c.networkDir(), PoolDefs: c.poolDefs}
	var ipam ipamConf
	if err := conf.DecodeIPAM(&ipam); err != nil {
		return Layout{}, err
	}
	if len(ipam.Ranges) > 0 || ipam.Subnet != "" {
		var extra netArgs // runtimeConfig.ipRanges comes from the runtime, not the file
		if l.RangeSets, err = standaloneRanges(ipam, extra); err != nil {
			return Layout{}, err
		}
	}
	return l, nil
}

// Pool resolves pool p (found at field) as ADD does; false when it has
// neither inline ranges nor a definition.
func (l Layout) Pool(p pool.Pool, field string) (pool.Definition, bool, error) {
	return poolSource(p, field, l.PoolDefs)
}

// poolSource is a pool's ranges (inline, else its ipam.poolDefinitions
// entry) and exclusions. The allocator's own exclusions hold whichever
// side supplies the ranges: never handing an address out is the safe
// reading of either list.
func poolSource(p pool.Pool, field string, defs map[string]pool.Definition) (pool.Definition, bool, error) {
	rs, inline, err := p.InlineRanges(field)
	if err != nil {
		return pool.Definition{}, false, err
	}
	def, defined := defs[p.Name]
	if !inline {
		if !defined {
			return pool.Definition{}, false, nil
		}
		rs = def.Set
	}
	ex, err := p.Exclusions(field)
	if err != nil {
		return pool.Definition{}, false, err
	}
	return pool.Definition{Set: rs, Exclude: ex.Union(def.Exclude)}, true, nil
}
