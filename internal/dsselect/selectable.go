package dsselect

import (
	"fmt"
	"slices"

	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// SelectablePool is a pool a selector can select: ipam-ds-static's, or
// ipam-ds-args' rule's or default's Pool object (inline ranges, or a name
// ipam.poolDefinitions defines) or podChoice name, with its overflow
// chain resolved as an ADD's selection carries it.
type SelectablePool struct {
	pool.Pool
	// Field is where the config defines it: "ipam.pools[0]"; for
	// ipam-ds-args the first place that gives it ranges
	// ("ipam.rules[0].pools[1]", "ipam.defaultPools[0]"), else the first
	// that names it.
	Field string
}

// Selectable is every pool the selectors among chain (a plugin's ipam
// type and delegates) can select, read by their own readers, each name
// once: ipam-ds-static's ipam.pools (the first listed: each must be
// defined, or every ADD fails), then ipam-ds-args' catalogue, the order
// its DEL, GC and STATUS name; quotas are ipam-ds-args' (nil without it).
// `cniplugins pools` and validate read a network's selectors with it, so
// a pool written inline is counted where the allocators keep it (its name
// is its state's place, inline or defined).
func Selectable(conf *netconf.Envelope, chain []string) (pools []SelectablePool, listed int, quotas *TenantQuotas, err error) {
	if slices.Contains(chain, StaticName) {
		static, err := StaticPools(conf)
		if err != nil {
			return nil, 0, nil, err
		}
		for i, p := range static {
			pools = append(pools, SelectablePool{Pool: p, Field: fmt.Sprintf("ipam.pools[%d]", i)})
		}
	}
	listed = len(pools)
	if slices.Contains(chain, ArgsName) {
		c, err := parseArgsConfig(conf)
		if err != nil {
			return nil, 0, nil, err
		}
		for i, p := range c.pools {
			pools = append(pools, SelectablePool{Pool: p, Field: c.fields[i]})
		}
		quotas = &TenantQuotas{c: c, found: map[string][]*pool.Quota{}}
	}
	return pools, listed, quotas, nil
}
