package ops

import (
	"fmt"
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
	var b strings.Builder
	for _, m := range promMetrics() {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", m.name, m.help, m.name)
		for _, u := range us {
			set := ""
			if u.RangeSet != nil {
				set = strconv.Itoa(*u.RangeSet)
			}
			fmt.Fprintf(&b, "%s{kind=%s,name=%s,range_set=%s,networks=%s} %s\n", m.name,
				promQuote(u.Kind), promQuote(u.Name), promQuote(set), promQuote(strings.Join(u.Networks, ",")),
				strconv.FormatFloat(m.value(u), 'g', -1, 64))
		}
	}
	writeTenantProm(&b, us)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTenantProm writes the quotas' gauges, labelled by tenant and pool:
// each tenant's addresses in the pool, and its quota where a configured
// rule sets one. Without tenants it writes nothing.
func writeTenantProm(b *strings.Builder, us []Usage) {
	if !slices.ContainsFunc(us, func(u Usage) bool { return len(u.Tenants) > 0 }) {
		return
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
	for _, g := range gauges {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", g.name, g.help, g.name)
		for _, u := range us {
			for _, t := range u.Tenants {
				if v, ok := g.value(t); ok {
					fmt.Fprintf(b, "%s{tenant=%s,pool=%s} %s\n", g.name, promQuote(t.Tenant), promQuote(u.Name), strconv.FormatFloat(v, 'g', -1, 64))
				}
			}
		}
	}
}

// promQuote quotes a label value as the exposition format escapes it.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
