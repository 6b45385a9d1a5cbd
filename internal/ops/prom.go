package ops

import (
	"io"
	"slices"
	"strconv"
	"strings"
)

// metric is one gauge of the Prometheus exposition `pools -o prom` writes.
type metric struct {
	name, help string
	value      func(Usage) float64
}

// metrics are documented in docs/cli.md ("Prometheus metrics"); names and labels are
// a stable interface for dashboards and alerts.
func promMetrics() []metric {
	return []metric{
		{"cniplugins_ipam_size_addresses", "Addresses the range set or pool can hand out (gateways and excluded addresses not counted).", func(u Usage) float64 { return float64(u.Size) }},
		{"cniplugins_ipam_used_addresses", "Addresses reserved in the range set or pool.", func(u Usage) float64 { return float64(u.Used) }},
		{"cniplugins_ipam_held_addresses", "Used addresses that sticky keys hold with no container (after a DEL, until the hold expires or is released).", func(u Usage) float64 { return float64(u.Held) }},
		{"cniplugins_ipam_free_addresses", "Addresses still free in the range set or pool.", func(u Usage) float64 { return float64(u.Free) }},
		{"cniplugins_ipam_exhausted", "1 while the range set or pool is exhausted (an ADD found it full and nothing was released since), else 0: what STATUS reads (one tenant's full pool fails only that tenant's ADDs).", func(u Usage) float64 {
			if u.Exhausted {
				return 1
			}
			return 0
		}},
	}
}

// WriteProm writes us in the Prometheus text exposition format (version
// 0.0.4), for node_exporter's textfile collector. Labels: kind
// ("range-set" or "pool"), name (network or pool), range_set (the index,
// "" for pools) and networks (the networks using it, comma-separated).
func WriteProm(w io.Writer, us []Usage) error {
	var fams []PromFamily
	for _, m := range promMetrics() {
		f := PromFamily{Name: m.name, Help: m.help, Type: "gauge"}
		for _, u := range us {
			set := ""
			if u.RangeSet != nil {
				set = strconv.Itoa(*u.RangeSet)
			}
			labels := []PromLabel{{"kind", u.Kind}, {"name", u.Name}, {"range_set", set}, {"networks", strings.Join(u.Networks, ",")}}
			f.Samples = append(f.Samples, PromSample{Labels: labels, Value: m.value(u)})
		}
		fams = append(fams, f)
	}
	return WritePromFamilies(w, append(fams, tenantFamilies(us)...))
}

// tenantFamilies are the quotas' gauges, labelled by tenant and pool:
// each tenant's addresses in the pool, and its quota where a configured
// rule sets one. Without tenants there are none.
func tenantFamilies(us []Usage) []PromFamily {
	if !slices.ContainsFunc(us, func(u Usage) bool { return len(u.Tenants) > 0 }) {
		return nil
	}
	gauges := []struct {
		name, help string
		value      func(TenantUsage) (float64, bool)
	}{
		{"cniplugins_tenant_addresses", "Addresses (reservations and sticky holds) a quota's tenant has in the pool.",
			func(t TenantUsage) (float64, bool) { return float64(t.InUse), true }},
		{"cniplugins_tenant_quota", "The most addresses the tenant's rule allows it across the pools of its selection (the pool's overflow chain included).",
			func(t TenantUsage) (float64, bool) {
				if t.Quota == nil {
					return 0, false
				}
				return float64(*t.Quota), true
			}},
	}
	var out []PromFamily
	for _, g := range gauges {
		f := PromFamily{Name: g.name, Help: g.help, Type: "gauge"}
		for _, u := range us {
			for _, t := range u.Tenants {
				if v, ok := g.value(t); ok {
					f.Samples = append(f.Samples, PromSample{Labels: []PromLabel{{"tenant", t.Tenant}, {"pool", u.Name}}, Value: v})
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// promQuote quotes a label value as the exposition format escapes it.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
