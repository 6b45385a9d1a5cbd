package ops

import (
	"io"
	"strconv"
	"strings"

	"github.com/cniplugins/cniplugins/internal/promtext"
)

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
		labels := []promtext.Label{{Name: "kind", Value: u.Kind}, {Name: "name", Value: u.Name}, {Name: "range_set", Value: set},
			{Name: "networks", Value: strings.Join(u.Networks, ",")}}
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
