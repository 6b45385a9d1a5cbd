package addrspace

import (
	"encoding/json"
	"math/big"
	"net/netip"
	"slices"
	"testing"
)

// FuzzIterExcluding: for any range set small enough to walk, any
// exclusions and any cursor, the lap with exclusions is exactly the lap
// without them minus the excluded addresses, in the same order, and ends.
func FuzzIterExcluding(f *testing.F) {
	f.Add([]byte(`[{"subnet":"10.0.0.0/28"},{"subnet":"10.0.1.0/29","rangeStart":"10.0.1.3"}]`), []byte(`["10.0.0.0/29","10.0.0.9","10.0.1.4"]`), "10.0.0.5")
	f.Add([]byte(`[{"subnet":"fd00::/124","gateway":"fd00::8"}]`), []byte(`["fd00::/125","fd00::9"]`), "fd00::3")
	f.Add([]byte(`[{"subnet":"10.0.0.0/30"}]`), []byte(`["0.0.0.0/0"]`), "")
	f.Fuzz(func(t *testing.T, cfgJSON, excludeJSON []byte, last string) {
		var cfgs []RangeConfig
		var entries []string
		if json.Unmarshal(cfgJSON, &cfgs) != nil || json.Unmarshal(excludeJSON, &entries) != nil {
			return
		}
		rs, err := ParseRangeSet("r", cfgs)
		if err != nil || size(rs).Cmp(big.NewInt(maxLapSize)) > 0 {
			return
		}
		ex, err := ParseExclusions("x", entries)
		if err != nil {
			return
		}
		var cursor netip.Addr
		if a, err := netip.ParseAddr(last); err == nil {
			cursor = a
		}
		var want []string
		for _, a := range lap(rs, cursor) {
			if !ex.Contains(netip.MustParseAddr(a)) {
				want = append(want, a)
			}
		}
		if got := lapExcluding(rs, cursor, ex); !slices.Equal(got, want) {
			t.Fatalf("set %s, exclude %v, cursor %v:\n got %v\nwant %v", rs, entries, cursor, got, want)
		}
	})
}
