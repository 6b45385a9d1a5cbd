package addrspace

import "net/netip"

// Iter walks a RangeSet in host-local's allocation order. Matching that
// order exactly matters: a directory shared with real host-local must see
// the same round-robin sequence whichever binary allocates next.
type Iter struct {
	rs    RangeSet
	idx   int        // range of cur
	cur   netip.Addr // last address produced; invalid before the first Next
	start netip.Addr // first address of the lap; reaching it again ends the lap
	done  bool
	ex    Exclusions // skipped runs (see IterExcluding); none for host-local configs
	hops  int        // range changes so far, to end a lap of excluded runs only
}

// Iter starts after last (the content of last_reserved_ip.N) when last is
// in the set, else at the first range's start. A lap visits every address
// of every range once, last itself at the end, skipping gateways and the
// network and broadcast addresses a range may start or end on.
func (rs RangeSet) Iter(last netip.Addr) *Iter { return rs.IterExcluding(last, Exclusions{}) }

// IterExcluding is Iter never yielding an address of ex. The order of what
// is left is Iter's, so a pool with exclusions keeps host-local's round
// robin, and a run of ex is stepped over at once, so its length costs
// nothing.
func (rs RangeSet) IterExcluding(last netip.Addr, ex Exclusions) *Iter {
	it := &Iter{rs: rs, ex: ex}
	if last.IsValid() {
		last = last.Unmap()
		for i, r := range rs {
			if r.Contains(last) {
				it.idx, it.cur = i, last
				break
			}
		}
	}
	return it
}

// Next returns the next candidate address and its range; ok is false once
// the lap is complete.
func (it *Iter) Next() (addr netip.Addr, r Range, ok bool) {
	for !it.done && len(it.rs) > 0 {
		r = it.rs[it.idx]
		switch {
		case !it.cur.IsValid():
			it.cur = r.Start
		case it.cur == r.End:
			it.idx = (it.idx + 1) % len(it.rs)
			r = it.rs[it.idx]
			it.cur = r.Start
			it.hops++
		default:
			it.cur = it.cur.Next()
		}
		if it.skipExcluded(r) {
			continue
		}
		if !it.start.IsValid() {
			it.start = it.cur
		} else if it.cur == it.start {
			it.done = true
			break
		}
		if it.cur == r.Gateway || !r.Usable(it.cur) {
			continue
		}
		return it.cur, r, true
	}
	return netip.Addr{}, Range{}, false
}

// skipExcluded: when the cursor sits in an excluded run of it.ex, it moves to the run's last address inside r, so that the next step
// leaves the run, and reports true (the address is not a candidate). The
// lap's first address is never an excluded one, so a lap still ends where
// it began; a lap that meets nothing but excluded runs ends once every
// range has been entered anew after the first (hops > len(rs)).
func (it *Iter) skipExcluded(r Range) bool {
	hi, ok := it.ex.runEnd(it.cur)
	if !ok {
		return false
	}
	if hi.Compare(r.End) > 0 {
		hi = r.End
	}
	it.cur = hi
	if !it.start.IsValid() && it.hops > len(it.rs) {
		it.done = true
	}
	return true
}
