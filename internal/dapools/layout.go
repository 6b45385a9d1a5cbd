package dapools

import (
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
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
	RangeSets []hostlocal.RangeSet
	// PoolDefs are ipam.poolDefinitions.
	PoolDefs map[string]hostlocal.RangeSet
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

// PoolRanges is the range set pool p allocates from: its inline ranges,
// else its entry in defs; false when it has neither.
func PoolRanges(p pool.Pool, field string, defs map[string]hostlocal.RangeSet) (hostlocal.RangeSet, bool, error) {
	rs, inline, err := p.InlineRanges(field)
	if err != nil || inline {
		return rs, inline, err
	}
	rs, ok := defs[p.Name]
	return rs, ok, nil
}
