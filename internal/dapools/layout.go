package dapools

import (
	"path/filepath"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Layout is where a network configuration keeps its addresses, as
// ipam-da-pools computes it (and upstream host-local, for the standalone
// keys): what the operators' CLI needs to read the state of a network
// without an ADD.
type Layout struct {
	DataDir string
	// RangeSets are the standalone range sets (ipam.ranges and the legacy
	// top-level range), nil when the config has none.
	RangeSets []addrspace.RangeSet
	// PoolDefs are ipam.poolDefinitions, every entry parsed and validated.
	PoolDefs map[string]pool.Definition
	defs     *pool.Definitions // the same, as the engine reads them
}

// PoolDir is the state directory of pool name under dataDir.
func PoolDir(dataDir, name string) string { return filepath.Join(dataDir, poolsDir, name) }

// ScopeDir is the state directory of scope s under dataDir: host-local's
// for the network, or the pool's, shared by every network that selects it
// so that no two of them can hold one address.
func ScopeDir(dataDir string, s alloc.Scope) string {
	if s.Pool != "" {
		return PoolDir(dataDir, s.Pool)
	}
	return filepath.Join(dataDir, s.Network)
}

// PoolsDir is the directory holding every pool's state directory.
func PoolsDir(dataDir string) string { return filepath.Join(dataDir, poolsDir) }

// DescribeConfig validates conf's ipam section as ADD would (without
// CNI_ARGS or a prevResult) and returns its layout. Range sets are only
// required when pools are not in use, which the caller knows: a config
// with neither ranges nor pools fails its first ADD, not this.
func DescribeConfig(conf *netconf.Envelope) (Layout, error) {
	dir, _, err := ownKeys(conf)
	if err != nil {
		return Layout{}, err
	}
	l, err := DescribeKeys(conf)
	l.DataDir = dir
	return l, err
}

// DescribeKeys is DescribeConfig for another allocator of this engine
// (ipam-da-etcd), whose state is not under a dataDir: the engine's keys
// alone, DataDir left empty.
func DescribeKeys(conf *netconf.Envelope) (Layout, error) {
	var keys ipamconf.Keys
	if err := conf.DecodeIPAM(&keys); err != nil {
		return Layout{}, err
	}
	c, err := keys.Parse(conf, nil, false)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{defs: c.PoolDefs}
	if l.PoolDefs, err = c.PoolDefs.All(); err != nil {
		return Layout{}, err
	}
	if l.RangeSets, err = keys.RangeSets(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// Pool resolves pool p (found at field) as ADD does; false when it has
// neither inline ranges nor a definition.
func (l Layout) Pool(p pool.Pool, field string) (pool.Definition, bool, error) {
	return alloc.PoolSource(p, field, l.defs)
}
