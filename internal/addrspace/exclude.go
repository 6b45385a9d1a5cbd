package addrspace

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Exclusions are addresses never handed out (a Pool object's "exclude").
// They are held as sorted, merged runs of consecutive addresses so that the
// iterator steps over a run of any length at once and a lookup costs
// O(log runs): allocation cost grows neither with the pool's size nor with
// how many addresses are excluded. The zero value excludes nothing.
type Exclusions struct {
	runs []addrRun // sorted by lo, disjoint, never adjacent
}

// addrRun is the closed interval [lo, hi], both of one family.
type addrRun struct{ lo, hi netip.Addr }

// ParseExclusions accepts addresses ("10.0.0.5") and CIDRs ("10.0.0.0/28",
// no host bits) of either family; field names the array in errors
// (entries are named field[i]).
func ParseExclusions(field string, entries []string) (Exclusions, error) {
	runs := make([]addrRun, 0, len(entries))
	for i, s := range entries {
		r, err := parseRun(s)
		if err != nil {
			return Exclusions{}, invalid(fmt.Sprintf("%s[%d]", field, i), s, err.Error())
		}
		runs = append(runs, r)
	}
	return Exclusions{runs: merge(runs)}, nil
}

func parseRun(s string) (addrRun, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return addrRun{}, fmt.Errorf("not an IP address or CIDR")
		}
		a = a.Unmap()
		return addrRun{a, a}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return addrRun{}, fmt.Errorf("not an IP address or CIDR")
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if p.Masked() != p {
		return addrRun{}, fmt.Errorf("has host bits set, network is %s", p.Masked())
	}
	return addrRun{p.Addr(), lastAddr(p)}, nil
}

// merge sorts runs and joins overlapping or adjacent ones. Runs of
// different families never join: the last IPv4 address has no successor.
func merge(runs []addrRun) []addrRun {
	if len(runs) == 0 {
		return nil
	}
	slices.SortFunc(runs, func(x, y addrRun) int { return x.lo.Compare(y.lo) })
	out := runs[:1]
	for _, r := range runs[1:] {
		cur := &out[len(out)-1]
		next := cur.hi.Next()
		if r.lo.Compare(cur.hi) <= 0 || (next.IsValid() && next == r.lo) {
			if r.hi.Compare(cur.hi) > 0 {
				cur.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// Union is every address excluded by e or o.
func (e Exclusions) Union(o Exclusions) Exclusions {
	if len(o.runs) == 0 {
		return e
	}
	if len(e.runs) == 0 {
		return o
	}
	return Exclusions{runs: merge(slices.Concat(e.runs, o.runs))}
}

// Contains reports whether a is excluded.
func (e Exclusions) Contains(a netip.Addr) bool {
	_, ok := e.runEnd(a)
	return ok
}

// runEnd returns the last address of the run holding a, if any.
func (e Exclusions) runEnd(a netip.Addr) (netip.Addr, bool) {
	a = a.Unmap()
	// The first run not wholly below a is the only one that can hold it.
	i, _ := slices.BinarySearchFunc(e.runs, a, func(r addrRun, a netip.Addr) int { return r.hi.Compare(a) })
	if i < len(e.runs) && e.runs[i].lo.Compare(a) <= 0 {
		return e.runs[i].hi, true
	}
	return netip.Addr{}, false
}

// Runs is the number of merged runs (for tests and benchmarks).
func (e Exclusions) Runs() int { return len(e.runs) }
