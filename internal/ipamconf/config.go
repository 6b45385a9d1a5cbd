package ipamconf

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// argIP is the one CNI_ARGS key host-local understands: requested
// addresses.
const argIP = "IP"

// ArgKeys are the CNI_ARGS keys an allocator of this engine accepts:
// host-local's IP, and stickiness's (StickyArgKeys) when ipam.sticky is
// configured or the allocator runs in ipam-delegated's chain (runtimes
// send them anyway, and a chain hands its one CNI_ARGS to every
// delegate). Otherwise CNI_ARGS are judged exactly as host-local judges
// them, K8S_POD_NAME without IgnoreUnknown being code 4: ipam-da-pools
// is a drop-in host-local under any name, and ipam-da-etcd follows the
// same rule rather than a second one.
func ArgKeys(conf *netconf.Envelope) ([]string, error) {
	keys := []string{argIP}
	var ipam struct {
		Type   string            `json:"type"`
		Sticky *alloc.StickyKeys `json:"sticky"`
	}
	if err := conf.DecodeIPAM(&ipam); err == nil && (ipam.Sticky != nil || ipam.Type == chainType) {
		keys = append(keys, StickyArgKeys()...)
	}
	return keys, nil
}

// chainType is ipam-delegated's ipam type (internal/delegated.Name, a
// package that this one does not import).
const chainType = "ipam-delegated"

// Standalone reports whether conf names the personality name as its ipam
// type, host-local's place in a network config, where the ranges must be
// in the config. Inside a chain the pools arrive later, in prevResult, so
// a config check can only check what the config itself says.
func Standalone(conf *netconf.Envelope, name string) (bool, error) {
	var ipam struct {
		Type string `json:"type"`
	}
	err := conf.DecodeIPAM(&ipam)
	return ipam.Type == name, err
}

// Keys are the ipam keys every allocator of this engine shares:
// host-local's, plus pool definitions. An allocator decodes its own keys
// beside them.
type Keys struct {
	Ranges [][]addrspace.RangeConfig `json:"ranges"`
	// The deprecated single range at the top level of ipam.
	addrspace.RangeConfig
	Routes     []*types.Route `json:"routes"`
	ResolvConf string         `json:"resolvConf"`
	// Each entry is a range set or {"ranges": [...], "exclude": [...]}.
	PoolDefinitions map[string]json.RawMessage `json:"poolDefinitions"`
}

// netArgs is what the rest of the config says about requested addresses
// and runtime-supplied ranges.
type netArgs struct {
	Args struct {
		CNI struct {
			IPs []string `json:"ips"`
		} `json:"cni"`
	}
	RuntimeConfig struct {
		IPs      []string                  `json:"ips"`
		IPRanges [][]addrspace.RangeConfig `json:"ipRanges"`
	}
}

// Parse decodes conf's ipam section and validates it with Keys.Parse.
func Parse(conf *netconf.Envelope, cniArgs []netconf.CNIArg, needRanges bool) (*alloc.Config, error) {
	var k Keys
	if err := conf.DecodeIPAM(&k); err != nil {
		return nil, err
	}
	return k.Parse(conf, cniArgs, needRanges)
}

// ParseDel is Parse for DEL (and GC), which works from state alone but
// releases prevResult's addresses in one round trip when the config
// still places them: the standalone range sets are there while they
// parse, and missing, with no error, once they have changed into ones
// that do not. Parsed once, the config serves both of DEL's paths.
func ParseDel(conf *netconf.Envelope, cniArgs []netconf.CNIArg) (*alloc.Config, error) {
	var k Keys
	if err := conf.DecodeIPAM(&k); err != nil {
		return nil, err
	}
	c, runtimeRanges, err := k.parse(conf, cniArgs)
	if err != nil || c.Pools != nil {
		return c, err
	}
	if sets, err := k.standaloneRanges(runtimeRanges); err == nil {
		c.RangeSets = sets
	}
	return c, nil
}

// Parse validates k with the rest of conf and the CNI_ARGS before
// anything touches a store. needRanges is false for DEL and GC, which
// must work from state alone even when the ranges in the config have
// since changed.
func (k Keys) Parse(conf *netconf.Envelope, cniArgs []netconf.CNIArg, needRanges bool) (*alloc.Config, error) {
	c, runtimeRanges, err := k.parse(conf, cniArgs)
	if err != nil || c.Pools != nil || !needRanges {
		return c, err
	}
	c.RangeSets, err = k.standaloneRanges(runtimeRanges)
	return c, err
}

// parse is Parse but the standalone ranges: it returns the runtime's
// (runtimeConfig.ipRanges) for the caller to read them, or not.
func (k Keys) parse(conf *netconf.Envelope, cniArgs []netconf.CNIArg) (*alloc.Config, [][]addrspace.RangeConfig, error) {
	var extra netArgs
	if err := conf.DecodeArgs(&extra.Args); err != nil {
		return nil, nil, err
	}
	if err := conf.DecodeRuntimeConfig(&extra.RuntimeConfig); err != nil {
		return nil, nil, err
	}
	c := &alloc.Config{Network: conf.Name, Routes: k.Routes, ResolvConf: k.ResolvConf}
	var err error
	if c.Requested, err = requestedAddrs(cniArgs, extra); err != nil {
		return nil, nil, err
	}
	if c.PoolDefs, err = pool.NewDefinitions("ipam.poolDefinitions", k.PoolDefinitions); err != nil {
		return nil, nil, err
	}
	overflows := c.PoolDefs.Overflows
	if err := checkDefinedChains(overflows); err != nil {
		return nil, nil, err
	}
	pools, poolMode, err := pool.FromPrevResult(conf)
	if err != nil {
		return nil, nil, err
	}
	if poolMode {
		// Chains resolve on every command: an unknown overflow pool or a
		// cycle is 7 for DEL and GC too, which cover the chain.
		for i, p := range pools {
			cat := pool.Catalog{Pools: p.OverflowPools, Overflows: overflows}
			if pools[i], err = cat.Resolve(fmt.Sprintf("prevResult.pools[%d]", i), p); err != nil {
				return nil, nil, err
			}
		}
		c.Pools = pools
		c.Quota, err = pool.QuotaFromPrevResult(conf)
		return c, nil, err
	}
	return c, extra.RuntimeConfig.IPRanges, nil
}

// RangeSets are the standalone range sets the config file itself names
// (runtimeConfig.ipRanges comes from the runtime, not the file), nil when
// it names none.
func (k Keys) RangeSets() ([]addrspace.RangeSet, error) {
	if len(k.Ranges) == 0 && k.Subnet == "" {
		return nil, nil
	}
	return k.standaloneRanges(nil)
}

// standaloneRanges follows host-local: runtimeConfig.ipRanges replaces
// ipam.ranges; the deprecated top-level range comes first; sets must not
// overlap one another.
func (k Keys) standaloneRanges(runtimeRanges [][]addrspace.RangeConfig) ([]addrspace.RangeSet, error) {
	cfgs, field := k.Ranges, "ipam.ranges"
	if len(runtimeRanges) > 0 {
		cfgs, field = runtimeRanges, "runtimeConfig.ipRanges"
	}
	var sets []addrspace.RangeSet
	legacy := 0
	if k.Subnet != "" {
		legacy = 1
	}
	if n := len(cfgs) + legacy; n > pool.MaxPerAttachment {
		return nil, cnierr.InvalidConfig(field, fmt.Sprintf("%d range sets", n), fmt.Sprintf("at most %d range sets", pool.MaxPerAttachment))
	}
	if legacy == 1 {
		// The legacy keys sit in ipam itself: errors name ipam.subnet,
		// not a range-set element that does not exist in the config.
		r, err := k.RangeConfig.Canonicalize("ipam")
		if err != nil {
			return nil, err
		}
		sets = append(sets, addrspace.RangeSet{r})
	}
	for i, cfg := range cfgs {
		rs, err := addrspace.ParseRangeSet(fmt.Sprintf("%s[%d]", field, i), cfg)
		if err != nil {
			return nil, err
		}
		sets = append(sets, rs)
	}
	if len(sets) == 0 {
		return nil, cnierr.MissingConfig("ipam.ranges")
	}
	return sets, addrspace.CheckDisjoint(sets, func(set, idx int) string {
		if set < legacy {
			return "ipam" // the legacy range's keys sit in ipam itself
		}
		return fmt.Sprintf("%s[%d][%d]", field, set-legacy, idx)
	})
}

// checkDefinedChains resolves the overflow chain of every pool of
// ipam.poolDefinitions: an unknown overflow or a cycle among them is 7,
// whether a selector names the pool or not.
func checkDefinedChains(overflows map[string]string) error {
	cat := pool.Catalog{Overflows: overflows}
	for _, name := range slices.Sorted(maps.Keys(overflows)) {
		if _, err := cat.Resolve("ipam.poolDefinitions."+name, pool.Pool{Name: name}); err != nil {
			return err
		}
	}
	return nil
}
