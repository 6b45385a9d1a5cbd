package addrspace

import (
	"math"
	"net/netip"
)

// Size counts the addresses of rs an ADD can hand out: each range from
// start to end, less its gateway and the addresses ex excludes. exact is
// false when the count saturated at 2^64-1 (IPv6 ranges larger than a
// /64); the count is then that bound.
func (rs RangeSet) Size(ex Exclusions) (n uint64, exact bool) {
	exact = true
	for _, r := range rs {
		s, ok := span(r.Start, r.End)
		if !ok {
			return math.MaxUint64, false
		}
		if r.Contains(r.Gateway) && !ex.Contains(r.Gateway) {
			s--
		}
		for _, run := range ex.runs {
			lo, hi := maxAddr(run.lo, r.Start), minAddr(run.hi, r.End)
			if lo.Is4() != r.Start.Is4() || lo.Compare(hi) > 0 {
				continue
			}
			if k, ok := span(lo, hi); ok {
				s -= min(k, s)
			} else {
				s = 0
			}
		}
		if n > math.MaxUint64-s {
			return math.MaxUint64, false
		}
		n += s
	}
	return n, exact
}

// span is end-start+1 for start <= end of one family; false when it does
// not fit in a uint64.
func span(start, end netip.Addr) (uint64, bool) {
	a, b := start.As16(), end.As16()
	var hiA, hiB, loA, loB uint64
	for i := range 8 {
		hiA, hiB = hiA<<8|uint64(a[i]), hiB<<8|uint64(b[i])
		loA, loB = loA<<8|uint64(a[8+i]), loB<<8|uint64(b[8+i])
	}
	hi := hiB - hiA
	if loB < loA {
		hi--
	}
	if hi != 0 || loB-loA == math.MaxUint64 {
		return math.MaxUint64, false
	}
	return loB - loA + 1, true
}

func maxAddr(a, b netip.Addr) netip.Addr {
	if a.Compare(b) > 0 {
		return a
	}
	return b
}

func minAddr(a, b netip.Addr) netip.Addr {
	if a.Compare(b) < 0 {
		return a
	}
	return b
}
