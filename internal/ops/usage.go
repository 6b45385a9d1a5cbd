package ops

import (
	"fmt"
	"io"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/promtext"
)

// Usage is how full one range set or pool is; its JSON form is the
// schema of `cniplugins pools -o json` (docs/cli.md).
type Usage struct {
	Kind      string        `json:"kind"` // "range-set" (a network's standalone) or "pool"
	Name      string        `json:"name"`
	RangeSet  *int          `json:"rangeSet"` // nil for a pool
	Networks  []string      `json:"networks"`
	Ranges    string        `json:"ranges"`
	Dir       string        `json:"dir"`
	Size      uint64        `json:"size"` // saturates at 2^64-1
	Used      uint64        `json:"used"`
	Held      uint64        `json:"held"`
	Migrating uint64        `json:"migrating"`
	Free      uint64        `json:"free"`
	Percent   float64       `json:"percentUsed"`
	Exhausted bool          `json:"exhausted"`
	Overflow  []string      `json:"overflow,omitempty"`
	Tenants   []TenantUsage `json:"tenants,omitempty"`
	// Conflict is set when configurations sharing its state disagree on
	// its ranges: each definition is a row of its own, and Conflict says
	// which this one is and where the others are written.
	Conflict string `json:"conflict,omitempty"`

	set     addrspace.RangeSet
	exclude addrspace.Exclusions
	id      int // range set ID in its directory
	scope   alloc.Scope
	def     definition               // where its ranges are first given
	quotas  []*dsselect.TenantQuotas // of each network using it
}

// TenantUsage is one tenant's addresses in a pool, and the quota its
// ADDs carry, which bounds them across the pools it is counted in (nil
// when no rule gives the tenant a quota counting this pool).
type TenantUsage struct {
	Tenant string `json:"tenant"`
	InUse  int    `json:"inUse"`
	Quota  *int   `json:"quota"`
}

// PlaceError is a backend that read a scope's state elsewhere than
// Describe placed it: their layouts disagree, and the counts would be
// another place's.
type PlaceError struct {
	Scope StateScope
	Place string
}

func (e PlaceError) Error() string {
	what := "network " + e.Scope.Network
	if e.Scope.Pool != "" {
		what = "pool " + e.Scope.Pool
	}
	return fmt.Sprintf("%s: its state was read at %s, not at %s where its configuration places it", what, e.Place, e.Scope.Dir)
}

// UsagesIn lists, for every network in nets whose state b holds (the
// etcd backend: the ipam-da-etcd networks; the data dir: the others),
// each standalone range set and each pool once (a pool shared by several
// networks lists them all), in configuration order, with counts read
// from b.
func UsagesIn(b Backend, nets []Network) ([]Usage, error) {
	out := usageRows(nets, b.Shared())
	var scopes []StateScope // each once: a network's range sets share its directory
	for _, u := range out {
		if s := (StateScope{Dir: u.Dir, Scope: u.scope}); !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	states, err := b.States(scopes)
	if err != nil {
		return nil, err
	}
	for i := range out {
		s := StateScope{Dir: out[i].Dir, Scope: out[i].scope}
		st := states[slices.Index(scopes, s)]
		if st.Place != s.Dir {
			return nil, PlaceError{Scope: s, Place: st.Place}
		}
		out[i].count(st)
	}
	return out, nil
}

// usageRows lists the rows of nets' range sets and pools kept in a
// shared store (or not): one per state directory, range set and ranges,
// so that a pool two configurations define differently is never counted
// against one of the definitions only.
func usageRows(nets []Network, shared bool) []Usage {
	out := []Usage{}
	add := func(u Usage, n Network, field string) {
		u.Ranges = u.set.String()
		i := slices.IndexFunc(out, func(o Usage) bool { return o.sameState(u) && o.Ranges == u.Ranges })
		if i < 0 {
			u.def = definition{ranges: u.Ranges, file: n.Conf.File, path: n.Conf.field(field)}
			i, out = len(out), append(out, u)
		}
		out[i].join(n)
	}
	for _, n := range nets {
		if (n.EtcdPrefix != "") != shared {
			continue
		}
		for i, rs := range n.RangeSets {
			add(Usage{Kind: "range-set", Name: n.Conf.Network, RangeSet: &i, Dir: n.Dir, set: rs, id: i, scope: alloc.Scope{Network: n.Conf.Network}}, n,
				fmt.Sprintf("ipam.ranges[%d]", i))
		}
		for _, p := range n.Pools {
			add(Usage{Kind: "pool", Name: p.Name, Dir: p.Dir, set: p.Set, exclude: p.Exclude, Overflow: p.Chain, scope: alloc.Scope{Pool: p.Name}}, n, p.Field)
		}
	}
	// A state defined differently says, on each definition's row, where
	// the others are, in validate's words.
	for i, u := range out {
		var others []string
		for _, o := range out {
			if o.sameState(u) && o.Ranges != u.Ranges {
				others = append(others, o.def.String())
			}
		}
		if others != nil {
			out[i].Conflict = fmt.Sprintf("as %s (%s) defines it; defined differently in %s", u.def.file, u.def.path, strings.Join(others, ", "))
		}
	}
	return out
}

// sameState reports whether u and o count the same state: a state
// directory's range set, or its pool.
func (u Usage) sameState(o Usage) bool { return u.Dir == o.Dir && u.id == o.id }

// definition is one configuration's ranges for a shared state (a state
// directory's range set or pool), where it first gives them. More than
// one for a state is a conflict: the networks sharing the state would
// disagree on its ranges, which validate reports and pools shows.
type definition struct{ ranges, file, path string }

func (d definition) String() string { return fmt.Sprintf("%s (%s: %s)", d.file, d.path, d.ranges) }

// join adds network n to u's networks, and its quotas to u's.
func (u *Usage) join(n Network) {
	if !slices.Contains(u.Networks, n.Conf.Network) {
		u.Networks = append(u.Networks, n.Conf.Network)
	}
	if n.Quotas != nil && !slices.Contains(u.quotas, n.Quotas) {
		u.quotas = append(u.quotas, n.Quotas)
	}
}

// count fills u's counts from its scope's state.
func (u *Usage) count(st alloc.ScopeState) {
	in := func(ips []netip.Addr) (n uint64) {
		for _, ip := range ips {
			if u.set.Contains(ip) && !u.exclude.Contains(ip) {
				n++
			}
		}
		return n
	}
	u.Used, u.Held, u.Migrating = in(st.Addrs), in(st.Held), in(st.Migrating)
	u.Size, _ = u.set.Size(u.exclude)
	u.Free = u.Size - min(u.Used, u.Size)
	if u.Size > 0 {
		u.Percent = math.Round(float64(u.Used)/float64(u.Size)*10000) / 100
	}
	u.Exhausted = slices.Contains(st.Full, u.id)
	u.Tenants = u.tenantUsage(st.Tenants) // a pool's state only has tenants
}

// tenantUsage counts each tenant's addresses in the pool, sorted by
// tenant, each with the quota its ADDs carry: the smallest of the
// networks' using the pool (dsselect.TenantQuotas, the selector's own
// computation), nil when none bounds it.
func (u *Usage) tenantUsage(tenants map[netip.Addr]string) []TenantUsage {
	count := map[string]int{}
	for _, t := range tenants {
		count[t]++
	}
	var out []TenantUsage
	for _, t := range slices.Sorted(maps.Keys(count)) {
		tu := TenantUsage{Tenant: t, InUse: count[t]}
		for _, q := range u.quotas {
			if m, ok := q.Of(u.Name, t); ok && (tu.Quota == nil || m < *tu.Quota) {
				tu.Quota = &m
			}
		}
		out = append(out, tu)
	}
	return out
}

// WriteProm writes us as gauges for node_exporter's textfile collector.
// Names and labels are documented in docs/cli.md ("Prometheus metrics"),
// a stable interface for dashboards and alerts.
func WriteProm(w io.Writer, us []Usage) error {
	gauge := func(name, help string) promtext.Family { return promtext.Family{Name: name, Help: help, Type: "gauge"} }
	// One family per value of a row, in the order of values below.
	fams := []promtext.Family{
		gauge("cniplugins_ipam_size_addresses", "Addresses the range set or pool can hand out (gateways and excluded addresses not counted)."),
		gauge("cniplugins_ipam_used_addresses", "Addresses reserved in the range set or pool."),
		gauge("cniplugins_ipam_held_addresses", "Used addresses that sticky keys hold with no container (after a DEL, until the hold expires or is released)."),
		gauge("cniplugins_ipam_free_addresses", "Addresses still free in the range set or pool."),
		gauge("cniplugins_ipam_exhausted", "1 while the range set or pool is exhausted (an ADD found it full and nothing was released since), else 0: what STATUS reads (one tenant's full pool fails only that tenant's ADDs)."),
	}
	// The quotas' gauges, by tenant and pool; without tenants, none.
	inUse := gauge("cniplugins_tenant_addresses", "Addresses (reservations and sticky holds) a quota's tenant has in the pool.")
	quota := gauge("cniplugins_tenant_quota", "The most addresses the tenant's rule allows it across the pools of its selection (the pool's overflow chain included).")
	for _, u := range us {
		set, exhausted := "", 0.0
		if u.RangeSet != nil {
			set = strconv.Itoa(*u.RangeSet)
		}
		if u.Exhausted {
			exhausted = 1
		}
		labels := []promtext.Label{{Name: "kind", Value: u.Kind}, {Name: "name", Value: u.Name}, {Name: "range_set", Value: set}, {Name: "networks", Value: strings.Join(u.Networks, ",")}}
		for i, v := range []float64{float64(u.Size), float64(u.Used), float64(u.Held), float64(u.Free), exhausted} {
			fams[i].Samples = append(fams[i].Samples, promtext.Sample{Labels: labels, Value: v})
		}
		for _, t := range u.Tenants {
			labels := []promtext.Label{{Name: "tenant", Value: t.Tenant}, {Name: "pool", Value: u.Name}}
			inUse.Samples = append(inUse.Samples, promtext.Sample{Labels: labels, Value: float64(t.InUse)})
			if t.Quota != nil {
				quota.Samples = append(quota.Samples, promtext.Sample{Labels: labels, Value: float64(*t.Quota)})
			}
		}
	}
	if inUse.Samples != nil {
		fams = append(fams, inUse, quota)
	}
	return promtext.Write(w, fams)
}
