package ops

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// IPAM types whose state the CLI understands.
const (
	typeDelegated = "ipam-delegated"
	typeHostLocal = "host-local"
	// typeEtcd is ipam-da-etcd, named here only: the lean binary links
	// none of it, and reads its configurations to list their pools.
	typeEtcd = "ipam-da-etcd"
)

// isAllocator reports whether an IPAM type is an allocator whose state
// the CLI reads: host-local's layout under a data dir, or ipam-da-etcd's
// keys.
func isAllocator(t string) bool { return t == dapools.Name || t == typeHostLocal || t == typeEtcd }

// Network is what one plugin configuration allocates from.
type Network struct {
	Conf PluginConf
	// Dir is the standalone state directory; RangeSets its range sets.
	Dir       string
	RangeSets []addrspace.RangeSet
	// Pools are every pool the configuration can select or defines.
	Pools []PoolDef
	// Quotas answer each tenant's quota under its ipam-ds-args rules
	// (nil without them).
	Quotas *dsselect.TenantQuotas
	// EtcdPrefix is an ipam-da-etcd network's key prefix (ipam.etcd.prefix
	// as the allocator reads it); "" for a network whose state is under a
	// data dir. Its Dir and its pools' are then where their claims' keys
	// are in etcd.
	EtcdPrefix string
}

// PoolDef is one pool a network can allocate from.
type PoolDef struct {
	Name string
	// Field is where the configuration defines or names it:
	// ipam.pools[i], ipam.rules[i].pools[j], ipam.defaultPools[i],
	// ipam.rules[i].podChoice[j] or ipam.poolDefinitions.NAME.
	Field string
	Dir   string
	pool.Definition
	// Chain is the pool's overflow chain: the pools after it, in order.
	Chain []string
}

// Describe works out where p keeps its addresses; ok is false when its
// IPAM is not one the CLI reads: one of the allocators directly, or
// ipam-delegated with one of them as a delegate (the allocator is its
// first such delegate; a list with an entry that is no name is none:
// ipam-delegated refuses it). dataDir, when set, replaces the
// configuration's dataDir (to inspect a copy, or a test's directory).
// Errors are the plugins' own (code 7 naming the field).
func Describe(p PluginConf, dataDir string) (Network, bool, error) {
	chain, delegates := p.ipam() // the ipam type, then the delegates
	i := slices.IndexFunc(chain, isAllocator)
	if i < 0 || len(chain) != 1+len(delegates) {
		return Network{}, false, nil
	}
	n := Network{Conf: p}
	env, c, sets, err := n.readKeys(chain[i] == typeEtcd, &dataDir)
	if err != nil {
		return Network{}, true, err
	}
	n.Dir = scopeDir(dataDir, n.EtcdPrefix, alloc.Scope{Network: env.Name})
	cands, listed, quotas, err := dsselect.Selectable(env, chain)
	if err != nil {
		return n, true, err
	}
	n.Quotas = quotas
	if !slices.ContainsFunc(chain, func(d string) bool { return strings.HasPrefix(d, "ipam-ds-") }) {
		if sets == nil {
			return n, true, cnierr.MissingConfig("ipam.ranges")
		}
		n.RangeSets = sets
	}
	// Each name once, as the allocator resolves it (alloc.PoolSource:
	// inline ranges, else the definition): an inline pool's state is
	// where a defined one's of the same name is.
	overflows := c.PoolDefs.Overflows
	for _, name := range slices.Sorted(maps.Keys(overflows)) {
		cands = append(cands, dsselect.SelectablePool{Pool: pool.Pool{Name: name}, Field: "ipam.poolDefinitions." + name})
	}
	for i, cand := range cands {
		// The chain as the allocator resolves a selection's again
		// (ipamconf): an overflowPools without an overflow is no chain.
		cat := pool.Catalog{Pools: cand.OverflowPools, Overflows: overflows}
		if cand.Pool, err = cat.Resolve(cand.Field, cand.Pool); err != nil {
			return n, true, err
		}
		if slices.ContainsFunc(n.Pools, func(d PoolDef) bool { return d.Name == cand.Name }) {
			continue
		}
		src, ok, err := alloc.PoolSource(cand.Pool, cand.Field, c.PoolDefs)
		if err != nil {
			return n, true, err
		}
		if !ok && i < listed {
			return n, true, cnierr.New(cnierr.CodeInvalidConfig, "unknown pool: no inline ranges and no ipam.poolDefinitions entry", "%s.name=%s", cand.Field, cand.Name)
		}
		if ok { // else a rule's name nothing defines: its ADDs fail (code 7), nothing to count
			n.Pools = append(n.Pools, PoolDef{Name: cand.Name, Field: cand.Field, Dir: scopeDir(dataDir, n.EtcdPrefix, alloc.Scope{Pool: cand.Name}), Definition: src, Chain: cand.Names()[1:]})
		}
	}
	return n, true, checkChainFamilies(n.Pools)
}

// checkChainFamilies finds, up front and by the ADD's own rule
// (alloc.ChainFamily), the chain an ADD finds leaving its address family
// only when it spills (alloc.Config.AddTargets).
func checkChainFamilies(pools []PoolDef) error {
	for _, p := range pools {
		for _, name := range p.Chain {
			if i := slices.IndexFunc(pools, func(q PoolDef) bool { return q.Name == name }); i >= 0 {
				if err := alloc.ChainFamily(p.Field, append([]string{p.Name}, p.Chain...), name, p.Set, pools[i].Set); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readKeys validates the plugin's ipam keys with the allocators' own
// parsers, as ADD would (without CNI_ARGS or a prevResult), every pool
// definition included: the envelope, the engine's config (ipamconf) and
// the standalone range sets the file itself names (nil: none). An empty
// dataDir becomes ipam-da-pools' ipam.dataDir; for ipam-da-etcd, which
// has no dataDir (etcd), it sets n's EtcdPrefix.
func (n *Network) readKeys(etcd bool, dataDir *string) (env *netconf.Envelope, c *alloc.Config, sets []addrspace.RangeSet, err error) {
	var dir string
	if env, err = netconf.Parse(n.Conf.Raw); err == nil && !etcd {
		dir, _, err = dapools.OwnKeys(env)
	}
	var keys ipamconf.Keys
	if err == nil {
		err = env.DecodeIPAM(&keys)
	}
	if err == nil {
		c, err = keys.Parse(env, nil, false)
	}
	if err == nil {
		_, err = c.PoolDefs.All()
	}
	if err == nil {
		sets, err = keys.RangeSets()
	}
	if err == nil && etcd {
		n.EtcdPrefix, err = etcdPrefixOf(env)
	}
	*dataDir = cmp.Or(*dataDir, dir)
	return env, c, sets, err
}
