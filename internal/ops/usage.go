package ops

import (
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// Usage is how full one range set or pool is; its JSON form is the
// documented schema of `cniplugins pools -o json`.
type Usage struct {
	Kind string `json:"kind"` // "range-set" (of a network, standalone) or "pool"
	// Name is the network's name for a range set, the pool's for a pool.
	Name string `json:"name"`
	// RangeSet is the range set's index in the network's ranges (the N of
	// last_reserved_ip.N); null for a pool.
	RangeSet *int `json:"rangeSet"`
	// Networks lists the networks whose configuration uses it.
	Networks []string `json:"networks"`
	Ranges   string   `json:"ranges"` // "start-end,start-end"
	Dir      string   `json:"dir"`
	// Size counts the addresses that can be handed out (gateways
	// excluded); it saturates at 2^64-1 for huge IPv6 ranges.
	Size uint64 `json:"size"`
	Used uint64 `json:"used"`
	// Held counts the used addresses that sticky keys hold with no
	// container (after a DEL); Used - Held are in use.
	Held uint64 `json:"held"`
	// Migrating counts the used addresses a KubeVirt live migration's
	// two owners share (the source's and the target's pods).
	Migrating uint64  `json:"migrating"`
	Free      uint64  `json:"free"`
	Percent   float64 `json:"percentUsed"` // 0-100, two decimals
	// Exhausted is what STATUS reads: an ADD found it full and
	// nothing was released there since.
	Exhausted bool `json:"exhausted"`
	// Overflow is the pool's overflow chain: the pools an ADD takes an
	// address from, in order, when this one is full.
	Overflow []string `json:"overflow,omitempty"`
	// Tenants are the quotas' tenants with addresses in the pool.
	Tenants []TenantUsage `json:"tenants,omitempty"`

	set     addrspace.RangeSet
	exclude addrspace.Exclusions
	id      int // range set ID in its directory
	quotas  []dsselect.PoolQuota
}

// TenantUsage is one tenant's addresses in a pool, and the quota that
// bounds them (across the pools of its rule's selection; nil when no
// configured rule names it).
type TenantUsage struct {
	Tenant string `json:"tenant"`
	InUse  int    `json:"inUse"`
	Quota  *int   `json:"quota"`
}

// Usages lists, for every network in nets, each standalone range set and
// each pool once (a pool shared by several networks lists them all), in
// configuration order, with counts read from the state directories.
func Usages(nets []Network) ([]Usage, error) {
	out := []Usage{}
	index := map[string]int{} // dir + set ID → position in out
	add := func(u Usage, network string) {
		key := u.Dir + "\x00" + strconv.Itoa(u.id)
		if i, ok := index[key]; ok {
			if !slices.Contains(out[i].Networks, network) {
				out[i].Networks = append(out[i].Networks, network)
			}
			return
		}
		u.Networks = []string{network}
		index[key] = len(out)
		out = append(out, u)
	}
	for _, n := range nets {
		for i, rs := range n.RangeSets {
			add(Usage{Kind: "range-set", Name: n.Conf.Network, RangeSet: &i, Dir: n.Dir, set: rs, id: i}, n.Conf.Network)
		}
		for _, p := range n.Pools {
			add(Usage{Kind: "pool", Name: p.Name, Dir: p.Dir, set: p.Set, exclude: p.Exclude, Overflow: p.Chain, quotas: n.Quotas}, n.Conf.Network)
		}
	}
	used := map[string][]netip.Addr{}
	held := map[string]map[string]alloc.HoldRecord{}
	full := map[string][]int{}
	for i := range out {
		u := &out[i]
		addrs, ok := used[u.Dir]
		if !ok {
			var err error
			if addrs, err = hostlocal.ReservedAddrs(u.Dir); err != nil {
				return nil, err
			}
			used[u.Dir] = addrs
			if full[u.Dir], err = hostlocal.Exhausted(u.Dir); err != nil {
				return nil, err
			}
			if held[u.Dir], err = validHolds(u.Dir); err != nil {
				return nil, err
			}
		}
		for _, e := range held[u.Dir] {
			if !u.set.Contains(e.Addr) || u.exclude.Contains(e.Addr) {
				continue
			}
			if e.Held() {
				u.Held++
			} else if e.Second != "" {
				u.Migrating++
			}
		}
		for _, ip := range addrs {
			if u.set.Contains(ip) && !u.exclude.Contains(ip) {
				u.Used++
			}
		}
		u.Ranges = u.set.String()
		u.Size, _ = u.set.Size(u.exclude)
		u.Free = u.Size - min(u.Used, u.Size)
		if u.Size > 0 {
			u.Percent = math.Round(float64(u.Used)/float64(u.Size)*10000) / 100
		}
		u.Exhausted = slices.Contains(full[u.Dir], u.id)
		if u.Kind == "pool" {
			var err error
			if u.Tenants, err = tenantUsage(u.Dir, addrs, u.Name, u.quotas); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// tenantUsage counts each tenant's addresses in pool (state directory
// dir, reserved addresses addrs), sorted by tenant.
func tenantUsage(dir string, addrs []netip.Addr, pool string, quotas []dsselect.PoolQuota) ([]TenantUsage, error) {
	tenants, err := hostlocal.ReadTenants(dir, addrs)
	if err != nil || len(tenants) == 0 {
		return nil, err
	}
	count := map[string]int{}
	for _, t := range tenants {
		count[t]++
	}
	var out []TenantUsage
	for _, t := range slices.Sorted(maps.Keys(count)) {
		tu := TenantUsage{Tenant: t, InUse: count[t]}
		if m, ok := dsselect.QuotaOf(quotas, pool, t); ok {
			tu.Quota = &m
		}
		out = append(out, tu)
	}
	return out, nil
}

// Bar is a 20-cell gauge of p percent for tables.
func Bar(p float64) string {
	n := int(math.Round(p / 5))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}
