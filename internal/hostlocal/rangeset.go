package hostlocal

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// RangeSet is one element of host-local's "ranges": ranges of a single
// address family from which one address per ADD is taken.
type RangeSet []Range

// ParseRangeSet canonicalises cfgs and rejects what host-local rejects: an
// empty set, mixed families and overlapping ranges.
func ParseRangeSet(field string, cfgs []RangeConfig) (RangeSet, error) {
	if len(cfgs) == 0 {
		return nil, cnierr.InvalidConfig(field, "[]", "range set is empty")
	}
	rs := make(RangeSet, 0, len(cfgs))
	for i, c := range cfgs {
		f := fmt.Sprintf("%s[%d]", field, i)
		r, err := c.Canonicalize(f)
		if err != nil {
			return nil, err
		}
		if len(rs) > 0 && r.Subnet.Addr().Is4() != rs[0].Subnet.Addr().Is4() {
			return nil, cnierr.InvalidConfig(f+".subnet", c.Subnet, fmt.Sprintf("address family differs from %s[0]", field))
		}
		for j, o := range rs {
			if r.overlaps(o) {
				return nil, cnierr.InvalidConfig(f, r.String(), fmt.Sprintf("overlaps %s[%d] (%s)", field, j, o))
			}
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// CheckDisjoint rejects configs where two range sets share an address;
// host-local checks this across its whole "ranges" array because both
// sets would otherwise write reservations for the same file.
func CheckDisjoint(field string, sets []RangeSet) error {
	for i, a := range sets {
		for j := i + 1; j < len(sets); j++ {
			for ai, ra := range a {
				for bi, rb := range sets[j] {
					if ra.overlaps(rb) {
						return cnierr.InvalidConfig(fmt.Sprintf("%s[%d][%d]", field, j, bi), rb.String(),
							fmt.Sprintf("overlaps %s[%d][%d] (%s)", field, i, ai, ra))
					}
				}
			}
		}
	}
	return nil
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
