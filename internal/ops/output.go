package ops

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable replaces what is not a printable character (control
// characters, invalid UTF-8) with '?'.
func Printable(s string) string {
	bad := func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }
	if strings.IndexFunc(s, bad) < 0 {
		return s // the common case, without a copy
	}
	return strings.Map(func(r rune) rune {
		if bad(r) {
			return '?'
		}
		return r
	}, s)
}

// PromFamily is one metric family of a Prometheus text exposition (0.0.4).
// Processes beside `pools` (k8s-install's counters) write theirs through
// WritePromFamilies too, so every series is quoted and formatted one way.
type PromFamily struct {
	Name, Help string
	Type       string // "counter" or "gauge"
	Samples    []PromSample
}

// PromSample is one series of a family: its labels, in order, and value.
type PromSample struct {
	Labels []PromLabel
	Value  float64
}

// PromLabel is one label of a series.
type PromLabel struct{ Name, Value string }

// WriteProm writes us as gauges for node_exporter's textfile collector.
// Names and labels are documented in docs/cli.md ("Prometheus metrics"),
// a stable interface for dashboards and alerts.
func WriteProm(w io.Writer, us []Usage) error {
	gauge := func(name, help string) PromFamily { return PromFamily{Name: name, Help: help, Type: "gauge"} }
	// One family per value of a row, in the order of values below.
	fams := []PromFamily{
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
		labels := []PromLabel{{"kind", u.Kind}, {"name", u.Name}, {"range_set", set}, {"networks", strings.Join(u.Networks, ",")}}
		for i, v := range []float64{float64(u.Size), float64(u.Used), float64(u.Held), float64(u.Free), exhausted} {
			fams[i].Samples = append(fams[i].Samples, PromSample{Labels: labels, Value: v})
		}
		for _, t := range u.Tenants {
			labels := []PromLabel{{"tenant", t.Tenant}, {"pool", u.Name}}
			inUse.Samples = append(inUse.Samples, PromSample{Labels: labels, Value: float64(t.InUse)})
			if t.Quota != nil {
				quota.Samples = append(quota.Samples, PromSample{Labels: labels, Value: float64(*t.Quota)})
			}
		}
	}
	if inUse.Samples != nil {
		fams = append(fams, inUse, quota)
	}
	return WritePromFamilies(w, fams)
}

// WritePromFamilies writes fams in the text exposition format, each
// family's HELP and TYPE lines before its samples.
func WritePromFamilies(w io.Writer, fams []PromFamily) error {
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type)
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			if len(s.Labels) > 0 {
				pairs := make([]string, len(s.Labels))
				for i, l := range s.Labels {
					pairs[i] = l.Name + "=" + promQuote(l.Value)
				}
				b.WriteString("{" + strings.Join(pairs, ",") + "}")
			}
			b.WriteString(" " + strconv.FormatFloat(s.Value, 'g', -1, 64) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// promQuote quotes a label value as the exposition format escapes it.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
