package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// writePools prints pools' usages in the -o format. Columns that would
// be empty for every row appear only when some row has a value: HELD
// (sticky holds, part of USED) and MIGRATING (shared by a live
// migration's two owners, part of USED) after USED; OVERFLOW once a pool
// has a chain, TENANTS once a pool has a quota's tenant, CONFLICT once a
// pool is defined differently by the networks sharing it, last.
func writePools(w io.Writer, us []ops.Usage, out outputFlags) error {
	if out.format == formatProm {
		return ops.WriteProm(w, us)
	}
	some := func(f func(ops.Usage) bool) bool { return slices.ContainsFunc(us, f) }
	count := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return writeItems(w, out, us, []column[ops.Usage]{
		{"KIND", true, func(u ops.Usage) string { return u.Kind }},
		{"NAME", true, func(u ops.Usage) string { return u.Name }},
		{"SET", true, func(u ops.Usage) string {
			if u.RangeSet == nil {
				return ""
			}
			return strconv.Itoa(*u.RangeSet)
		}},
		{"RANGES", true, func(u ops.Usage) string { return u.Ranges }},
		{"SIZE", true, func(u ops.Usage) string { return count(u.Size) }},
		{"USED", true, func(u ops.Usage) string { return count(u.Used) }},
		{"HELD", some(func(u ops.Usage) bool { return u.Held > 0 }), func(u ops.Usage) string { return count(u.Held) }},
		{"MIGRATING", some(func(u ops.Usage) bool { return u.Migrating > 0 }), func(u ops.Usage) string { return count(u.Migrating) }},
		{"FREE", true, func(u ops.Usage) string { return count(u.Free) }},
		{"USED%", true, func(u ops.Usage) string { return strconv.FormatFloat(u.Percent, 'f', 1, 64) + "%" }},
		{"USAGE", true, func(u ops.Usage) string { return bar(u.Percent) }},
		{"EXHAUSTED", true, func(u ops.Usage) string { return map[bool]string{false: "no", true: "yes"}[u.Exhausted] }},
		{"NETWORKS", true, func(u ops.Usage) string { return strings.Join(u.Networks, ",") }},
		{"OVERFLOW", some(func(u ops.Usage) bool { return len(u.Overflow) > 0 }), func(u ops.Usage) string {
			return strings.Join(append([]string{u.Name}, u.Overflow...), "→")
		}},
		{"TENANTS", some(func(u ops.Usage) bool { return len(u.Tenants) > 0 }), func(u ops.Usage) string { return tenantsCell(u.Tenants) }},
		{"CONFLICT", some(func(u ops.Usage) bool { return u.Conflict != "" }), func(u ops.Usage) string { return u.Conflict }},
	})
}

// tenantsCell is a pool's tenants as "tenant in-use/quota" (in-use alone
// without a quota), comma-separated.
func tenantsCell(ts []ops.TenantUsage) string {
	cells := make([]string, len(ts))
	for i, t := range ts {
		cells[i] = fmt.Sprintf("%s %d", printableKey(t.Tenant), t.InUse)
		if t.Quota != nil {
			cells[i] += fmt.Sprintf("/%d", *t.Quota)
		}
	}
	return strings.Join(cells, ", ")
}
