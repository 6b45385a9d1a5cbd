package ops

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// IPAM types whose state the CLI understands.
const (
	typeDelegated = "ipam-delegated"
	typeHostLocal = "host-local"
)

// isAllocator reports whether an IPAM type keeps host-local's state layout.
func isAllocator(t string) bool { return t == dapools.Name || t == typeHostLocal }

// Network is what one plugin configuration allocates from.
type Network struct {
	Conf PluginConf
	// Dir is the standalone state directory; RangeSets its range sets.
	Dir       string
	RangeSets []addrspace.RangeSet
	// Pools are the pools the configuration names (ipam.pools) or defines
	// (ipam.poolDefinitions), with their ranges and state directories.
	Pools []PoolDef
	// Quotas are its ipam-ds-args rules' quotas, per pool.
	Quotas []dsselect.PoolQuota
}

// PoolDef is one pool a network can allocate from.
type PoolDef struct {
	Name  string
	Field string // where the configuration names it: ipam.pools[i] or ipam.poolDefinitions.NAME
	Dir   string
	pool.Definition
	// Chain is the pool's overflow chain: the pools after it, in order.
	Chain []string
}

// ours reports whether p's IPAM keeps state the CLI can read: ipam-da-pools
// or host-local directly, or ipam-delegated with one of them as a delegate.
func ours(p PluginConf) (delegates []string, ok bool) {
	t := p.IPAMType()
	if isAllocator(t) {
		return nil, true
	}
	if t != typeDelegated {
		return nil, false
	}
	var c struct {
		IPAM struct {
			Delegates []string `json:"delegates"`
		} `json:"ipam"`
	}
	if json.Unmarshal(p.Raw, &c) != nil {
		return nil, false
	}
	for _, d := range c.IPAM.Delegates {
		if isAllocator(d) {
			return c.IPAM.Delegates, true
		}
	}
	return nil, false
}

// Describe works out where p keeps its addresses; ok is false when its
// IPAM is not one the CLI reads. dataDir, when set, replaces the
// configuration's dataDir (to inspect a copy, or a test's directory).
// Errors are the plugins' own (code 7 naming the field).
func Describe(p PluginConf, dataDir string) (Network, bool, error) {
	delegates, ok := ours(p)
	if !ok {
		return Network{}, false, nil
	}
	env, err := p.Envelope()
	if err != nil {
		return Network{}, true, err
	}
	layout, err := dapools.DescribeConfig(env)
	if err != nil {
		return Network{}, true, err
	}
	if dataDir == "" {
		dataDir = layout.DataDir
	}
	n := Network{Conf: p, Dir: filepath.Join(dataDir, env.Name)}
	selected := slices.ContainsFunc(delegates, func(d string) bool { return strings.HasPrefix(d, "ipam-ds-") })
	if slices.Contains(delegates, dsselect.ArgsName) {
		if n.Quotas, err = dsselect.Quotas(env); err != nil {
			return n, true, err
		}
	}
	if !selected {
		if layout.RangeSets == nil {
			return n, true, cnierr.MissingConfig("ipam.ranges")
		}
		n.RangeSets = layout.RangeSets
	}
	var listed struct {
		Pools json.RawMessage `json:"pools"`
	}
	if err := env.DecodeIPAM(&listed); err != nil {
		return n, true, err
	}
	seen := map[string]bool{}
	chains := pool.Catalog{Overflows: pool.Overflows(layout.PoolDefs)}
	chain := func(field string, p pool.Pool) ([]string, error) {
		p, err := chains.Resolve(field, p)
		return p.Names()[1:], err
	}
	if len(listed.Pools) > 0 && string(listed.Pools) != "null" {
		pools, err := pool.ParseList(listed.Pools, "ipam.pools")
		if err != nil {
			return n, true, err
		}
		for i, pl := range pools {
			field := fmt.Sprintf("ipam.pools[%d]", i)
			cat := chains
			cat.Pools = pl.OverflowPools
			resolved, err := cat.Resolve(field, pl)
			if err != nil {
				return n, true, err
			}
			src, ok, err := layout.Pool(pl, fmt.Sprintf("ipam.pools[%d]", i))
			if err != nil {
				return n, true, err
			}
			if !ok {
				return n, true, cnierr.New(cnierr.CodeInvalidConfig, "unknown pool: no inline ranges and no ipam.poolDefinitions entry", "ipam.pools[%d].name=%s", i, pl.Name)
			}
			n.Pools = append(n.Pools, PoolDef{Name: pl.Name, Field: field, Dir: dapools.PoolDir(dataDir, pl.Name), Definition: src, Chain: resolved.Names()[1:]})
			seen[pl.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(layout.PoolDefs)) {
		if !seen[name] {
			c, err := chain("ipam.poolDefinitions."+name, pool.Pool{Name: name})
			if err != nil {
				return n, true, err
			}
			n.Pools = append(n.Pools, PoolDef{Name: name, Field: "ipam.poolDefinitions." + name, Dir: dapools.PoolDir(dataDir, name), Definition: layout.PoolDefs[name], Chain: c})
		}
	}
	return n, true, checkChainFamilies(n.Pools)
}

// checkChainFamilies finds, up front, the chain an ADD would find leaving
// its address family only when it spills (alloc.Config.AddTargets).
func checkChainFamilies(pools []PoolDef) error {
	byName := map[string]PoolDef{}
	for _, p := range pools {
		byName[p.Name] = p
	}
	for _, p := range pools {
		for _, name := range p.Chain {
			if q, ok := byName[name]; ok && q.Definition.Set.Is4() != p.Definition.Set.Is4() {
				return alloc.ChainFamilyError(p.Field, append([]string{p.Name}, p.Chain...), name)
			}
		}
	}
	return nil
}
