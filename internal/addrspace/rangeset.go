package addrspace

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// RangeSet is one element of host-local's "ranges": ranges of a single
// address family from which one address per ADD is taken.
type RangeSet []Range

// ParseRangeSet canonicalises cfgs and rejects what host-local rejects: an
// empty set, mixed families and overlapping ranges.
func ParseRangeSet(field string, cfgs []RangeConfig) (RangeSet, error) {
	if len(cfgs) == 0 {
		return nil, invalid(field, "[]", "range set is empty")
	}
	rs := make(RangeSet, 0, len(cfgs))
	for i, c := range cfgs {
		f := fmt.Sprintf("%s[%d]", field, i)
		r, err := c.Canonicalize(f)
		if err != nil {
			return nil, err
		}
		if len(rs) > 0 && r.Subnet.Addr().Is4() != rs[0].Subnet.Addr().Is4() {
			return nil, invalid(f+".subnet", c.Subnet, fmt.Sprintf("address family differs from %s[0]", field))
		}
		rs = append(rs, r)
	}
	all := make([]placed, len(rs))
	for i, r := range rs {
		all[i] = placed{set: 0, idx: i, r: r}
	}
	if a, b, ok := overlapping(all); ok {
		return nil, invalid(fmt.Sprintf("%s[%d]", field, b.idx), b.r.String(),
			fmt.Sprintf("overlaps %s[%d] (%s)", field, a.idx, a.r))
	}
	return rs, nil
}

// CheckDisjoint rejects configs where two range sets share an address;
// host-local checks this across its whole "ranges" array because both
// sets would otherwise write reservations for the same file. Each set must
// already be disjoint within itself (ParseRangeSet). field names range idx
// of set in errors: the sets need not all come from one config array (the
// legacy top-level range comes first).
func CheckDisjoint(sets []RangeSet, field func(set, idx int) string) error {
	var all []placed
	for si, rs := range sets {
		for i, r := range rs {
			all = append(all, placed{set: si, idx: i, r: r})
		}
	}
	if a, b, ok := overlapping(all); ok {
		return invalid(field(b.set, b.idx), b.r.String(),
			fmt.Sprintf("overlaps %s (%s)", field(a.set, a.idx), a.r))
	}
	return nil
}

// placed is a range with its position in the config.
type placed struct {
	set, idx int
	r        Range
}

func (p placed) before(o placed) bool { return p.set < o.set || (p.set == o.set && p.idx < o.idx) }

// overlapping finds two overlapping ranges, if any, the first in config
// order as a. Comparing every pair, as host-local does, costs O(n²): a
// config of a few MiB of ranges then takes minutes of CPU. Sorted by start,
// two ranges overlap only if some neighbours do (a range that overlaps a
// later one overlaps its own successor), so one sort and one pass suffice.
func overlapping(all []placed) (a, b placed, ok bool) {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(x, y placed) int {
		if c := x.r.Start.Compare(y.r.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(x.set, y.set); c != 0 {
			return c
		}
		return cmp.Compare(x.idx, y.idx)
	})
	for i := 1; i < len(sorted); i++ {
		x, y := sorted[i-1], sorted[i]
		if x.r.overlaps(y.r) {
			if y.before(x) {
				x, y = y, x
			}
			return x, y, true
		}
	}
	return placed{}, placed{}, false
}

// Contains reports whether a is allocatable-range address of any range
// (the gateway counts: it is inside the range, merely skipped).
func (rs RangeSet) Contains(a netip.Addr) bool {
	_, ok := rs.RangeFor(a)
	return ok
}

// RangeFor returns the range holding a.
func (rs RangeSet) RangeFor(a netip.Addr) (Range, bool) {
	for _, r := range rs {
		if r.Contains(a) {
			return r, true
		}
	}
	return Range{}, false
}

// String is host-local's format ("start-end,start-end") so error details
// read the same as upstream's.
func (rs RangeSet) String() string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Is4 reports an IPv4 range set (a set is of one family).
func (rs RangeSet) Is4() bool { return len(rs) > 0 && rs[0].Subnet.Addr().Is4() }
