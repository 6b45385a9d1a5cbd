package addrspace

import (
	"encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"testing"
)

// maxLapSize bounds the range sets whose lap the fuzz target walks.
const maxLapSize = 4096

// FuzzParseRangeSet: canonicalised ranges are well formed (one family,
// start and end inside the subnet, start <= end, the gateway of the same
// family), warn exactly when they include the network or IPv4 broadcast
// address, and never overlap; and the iterator, started anywhere, visits
// every allocatable address (in a range, not that range's gateway, network
// or broadcast address) exactly once per lap and nothing else,
// ending on the cursor when the cursor is allocatable. Invalid input is
// a *ConfigError (code 7 to a runtime) naming the field.
func FuzzParseRangeSet(f *testing.F) {
	f.Fuzz(func(t *testing.T, cfgJSON []byte, last string) {
		var cfgs []RangeConfig
		if json.Unmarshal(cfgJSON, &cfgs) != nil {
			return
		}
		rs, err := ParseRangeSet("ranges[0]", cfgs)
		overlap := bruteForceOverlap(cfgs)
		if err != nil {
			var e *ConfigError
			if !errors.As(err, &e) || !strings.HasPrefix(e.Field, "ranges[0]") {
				t.Fatalf("error %q, want a *ConfigError naming ranges[0]", err)
			}
			if strings.Contains(e.Reason, "overlaps") && !overlap {
				t.Fatalf("rejected as overlapping, but no two ranges overlap: %s", err)
			}
			return
		}
		if overlap {
			t.Fatalf("accepted overlapping ranges %s", rs)
		}
		checkCanonical(t, rs)
		var cursor netip.Addr
		if a, err := netip.ParseAddr(last); err == nil {
			cursor = a
		}
		if size(rs).Cmp(big.NewInt(maxLapSize)) > 0 {
			return
		}
		checkLap(t, rs, cursor)
	})
}

func checkCanonical(t *testing.T, rs RangeSet) {
	t.Helper()
	if len(rs) == 0 {
		t.Fatalf("empty range set accepted")
	}
	for i, r := range rs {
		network := r.Subnet.Addr()
		if r.Subnet != r.Subnet.Masked() || network.Is4In6() || network.Zone() != "" {
			t.Fatalf("range %d: subnet %s not canonical", i, r.Subnet)
		}
		if network.Is4() != rs[0].Subnet.Addr().Is4() {
			t.Fatalf("range %d: mixed families in %s", i, rs)
		}
		for _, a := range []netip.Addr{r.Start, r.End} {
			if !r.Subnet.Contains(a) || a.Is4() != network.Is4() {
				t.Fatalf("range %d: %s outside subnet %s", i, a, r.Subnet)
			}
		}
		if r.Gateway.Is4() != network.Is4() || r.Gateway.Zone() != "" {
			t.Fatalf("range %d: gateway %s not of the family of %s", i, r.Gateway, r.Subnet)
		}
		if r.Start.Compare(r.End) > 0 {
			t.Fatalf("range %d: start %s after end %s", i, r.Start, r.End)
		}
		if (r.Contains(network) && r.Usable(network)) || (network.Is4() && r.Contains(lastAddr(r.Subnet)) && r.Usable(lastAddr(r.Subnet))) {
			t.Fatalf("range %d (%s): the network or broadcast address counts as usable", i, r)
		}
		if w := r.Warning(); (w != "") != (r.Contains(network) || (network.Is4() && r.Contains(lastAddr(r.Subnet)))) {
			t.Fatalf("range %d (%s): warning %q", i, r, w)
		}
		for j, o := range rs[:i] {
			if r.Start.Compare(o.End) <= 0 && o.Start.Compare(r.End) <= 0 {
				t.Fatalf("ranges %d (%s) and %d (%s) overlap", j, o, i, r)
			}
		}
	}
}

// bruteForceOverlap compares every pair of ranges that canonicalise, the
// way host-local does.
func bruteForceOverlap(cfgs []RangeConfig) bool {
	var rs []Range
	for _, c := range cfgs {
		if r, err := c.Canonicalize("x"); err == nil {
			rs = append(rs, r)
		}
	}
	for i := range rs {
		for j := range i {
			if rs[i].overlaps(rs[j]) {
				return true
			}
		}
	}
	return false
}

// size is the number of addresses in the set's ranges.
func size(rs RangeSet) *big.Int {
	n := new(big.Int)
	for _, r := range rs {
		end := new(big.Int).SetBytes(r.End.AsSlice())
		n.Add(n, end.Sub(end, new(big.Int).SetBytes(r.Start.AsSlice())).Add(end, big.NewInt(1)))
	}
	return n
}

func checkLap(t *testing.T, rs RangeSet, cursor netip.Addr) {
	t.Helper()
	want := map[netip.Addr]bool{}
	for _, r := range rs {
		for a := r.Start; ; a = a.Next() {
			if a != r.Gateway && a != r.Subnet.Addr() && (a.Is6() || a != lastAddr(r.Subnet)) {
				want[a] = true
			}
			if a == r.End {
				break
			}
		}
	}
	it := rs.Iter(cursor)
	seen := map[netip.Addr]bool{}
	var lastSeen netip.Addr
	for ip, r, ok := it.Next(); ok; ip, r, ok = it.Next() {
		if seen[ip] {
			t.Fatalf("%s visited twice in one lap of %s from %s", ip, rs, cursor)
		}
		if !want[ip] || !r.Contains(ip) || ip == r.Gateway {
			t.Fatalf("%s (range %s) is not allocatable in %s", ip, r, rs)
		}
		seen[ip] = true
		lastSeen = ip
		if len(seen) > len(want) {
			t.Fatalf("lap longer than the set")
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("lap of %s from %s visited %d of %d allocatable addresses", rs, cursor, len(seen), len(want))
	}
	if _, _, ok := it.Next(); ok {
		t.Fatalf("iterator continues after the end of its lap")
	}
	if c := cursor.Unmap(); want[c] && lastSeen != c {
		t.Fatalf("lap from %s ended on %s, want the cursor last (host-local order)", c, lastSeen)
	}
}
