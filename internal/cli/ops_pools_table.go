package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// writePoolsTable is pools' table. Columns that would be empty for every
// row appear only when some row has a value: HELD (sticky holds, part of
// USED) and MIGRATING (shared by a live migration's two owners, part of
// USED) after USED; OVERFLOW once a pool has a chain, TENANTS once a
// pool has a quota's tenant, CONFLICT once a pool is defined differently
// by the networks sharing it, last.
func writePoolsTable(w io.Writer, us []ops.Usage, noHeaders bool) error {
	held := slices.ContainsFunc(us, func(u ops.Usage) bool { return u.Held > 0 })
	migrating := slices.ContainsFunc(us, func(u ops.Usage) bool { return u.Migrating > 0 })
	chained := slices.ContainsFunc(us, func(u ops.Usage) bool { return len(u.Overflow) > 0 })
	tenanted := slices.ContainsFunc(us, func(u ops.Usage) bool { return len(u.Tenants) > 0 })
	conflicts := slices.ContainsFunc(us, func(u ops.Usage) bool { return u.Conflict != "" })
	rows := make([][]string, len(us))
	for i, u := range us {
		set, exhausted := "", "no"
		if u.RangeSet != nil {
			set = strconv.Itoa(*u.RangeSet)
		}
		if u.Exhausted {
			exhausted = "yes"
		}
		rows[i] = []string{u.Kind, u.Name, set, u.Ranges, strconv.FormatUint(u.Size, 10), strconv.FormatUint(u.Used, 10),
			strconv.FormatUint(u.Free, 10), strconv.FormatFloat(u.Percent, 'f', 1, 64) + "%", ops.Bar(u.Percent), exhausted, strings.Join(u.Networks, ",")}
		if migrating {
			rows[i] = slices.Insert(rows[i], 6, strconv.FormatUint(u.Migrating, 10))
		}
		if held {
			rows[i] = slices.Insert(rows[i], 6, strconv.FormatUint(u.Held, 10))
		}
		if chained {
			rows[i] = append(rows[i], strings.Join(append([]string{u.Name}, u.Overflow...), "→"))
		}
		if tenanted {
			rows[i] = append(rows[i], tenantsCell(u.Tenants))
		}
		if conflicts {
			rows[i] = append(rows[i], u.Conflict)
		}
	}
	header := []string{"KIND", "NAME", "SET", "RANGES", "SIZE", "USED", "FREE", "USED%", "USAGE", "EXHAUSTED", "NETWORKS"}
	if migrating {
		header = slices.Insert(header, 6, "MIGRATING")
	}
	if held {
		header = slices.Insert(header, 6, "HELD")
	}
	if chained {
		header = append(header, "OVERFLOW")
	}
	if tenanted {
		header = append(header, "TENANTS")
	}
	if conflicts {
		header = append(header, "CONFLICT")
	}
	return ops.WriteTable(w, header, rows, noHeaders)
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
