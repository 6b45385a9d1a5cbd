package addrspace

import (
	"net/netip"
	"slices"
	"testing"
)

func lap(rs RangeSet, last netip.Addr) []string {
	var out []string
	it := rs.Iter(last)
	for ip, r, ok := it.Next(); ok; ip, r, ok = it.Next() {
		if !r.Contains(ip) {
			panic("address outside its range")
		}
		out = append(out, ip.String())
	}
	return out
}

func TestIterOrder(t *testing.T) {
	two := []RangeConfig{
		{Subnet: "10.0.0.0/29", RangeStart: "10.0.0.1", RangeEnd: "10.0.0.3"}, // gateway .1
		{Subnet: "10.0.1.0/29", RangeStart: "10.0.1.4", RangeEnd: "10.0.1.5"}, // gateway .1 outside range
	}
	tests := []struct {
		name string
		cfgs []RangeConfig
		last string
		want []string
	}{
		{"from start skipping gateway", two, "", []string{"10.0.0.2", "10.0.0.3", "10.0.1.4", "10.0.1.5"}},
		{"resume mid range", two, "10.0.0.2", []string{"10.0.0.3", "10.0.1.4", "10.0.1.5", "10.0.0.2"}},
		{"wrap to next range", two, "10.0.0.3", []string{"10.0.1.4", "10.0.1.5", "10.0.0.2", "10.0.0.3"}},
		{"wrap last range to first", two, "10.0.1.5", []string{"10.0.0.2", "10.0.0.3", "10.0.1.4", "10.0.1.5"}},
		{"last is gateway", two, "10.0.0.1", []string{"10.0.0.2", "10.0.0.3", "10.0.1.4", "10.0.1.5"}},
		{"last not in set", two, "10.0.2.7", []string{"10.0.0.2", "10.0.0.3", "10.0.1.4", "10.0.1.5"}},
		{"last in subnet outside range", two, "10.0.1.2", []string{"10.0.0.2", "10.0.0.3", "10.0.1.4", "10.0.1.5"}},
		{"gateway mid range", []RangeConfig{{Subnet: "10.0.0.0/29", Gateway: "10.0.0.3"}}, "10.0.0.2",
			[]string{"10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.1", "10.0.0.2"}},
		{"single address range that is the gateway", []RangeConfig{{Subnet: "10.0.0.0/30", RangeEnd: "10.0.0.1"}}, "", nil},
		{"v6 /126", []RangeConfig{{Subnet: "fd00::/126"}}, "fd00::2", []string{"fd00::3", "fd00::2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var last netip.Addr
			if tt.last != "" {
				last = mustAddr(tt.last)
			}
			if got := lap(mustSet(t, tt.cfgs...), last); !slices.Equal(got, tt.want) {
				t.Fatalf("lap = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestIterExactlyOncePerLap is the iterator's defining property: from any
// cursor, one lap yields every allocatable address exactly once.
func TestIterExactlyOncePerLap(t *testing.T) {
	sets := map[string][]RangeConfig{
		"/24":         {{Subnet: "192.168.0.0/24"}},
		"/30":         {{Subnet: "10.0.0.0/30"}},
		"v6 /126":     {{Subnet: "fd00::/126"}},
		"v6 /120 gw":  {{Subnet: "fd00::/120", Gateway: "fd00::80"}},
		"multi range": {{Subnet: "10.0.0.0/28", RangeEnd: "10.0.0.5"}, {Subnet: "10.0.0.0/28", RangeStart: "10.0.0.9"}, {Subnet: "10.9.0.0/30"}},
		"gw outside":  {{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.100", RangeEnd: "10.0.0.110"}},
	}
	for name, cfgs := range sets {
		t.Run(name, func(t *testing.T) {
			rs := mustSet(t, cfgs...)
			want := map[string]bool{}
			for _, r := range rs {
				for a := r.Start; a.Compare(r.End) <= 0; a = a.Next() {
					if a != r.Gateway {
						want[a.String()] = true
					}
				}
			}
			cursors := []netip.Addr{{}, mustAddr("1.2.3.4")}
			for _, r := range rs {
				for a := r.Start; a.Compare(r.End) <= 0; a = a.Next() {
					cursors = append(cursors, a)
				}
			}
			for _, c := range cursors {
				got := lap(rs, c)
				seen := map[string]bool{}
				for _, a := range got {
					if seen[a] || !want[a] {
						t.Fatalf("cursor %s: %s repeated or not allocatable in %v", c, a, got)
					}
					seen[a] = true
				}
				if len(seen) != len(want) {
					t.Fatalf("cursor %s: lap has %d addresses, want %d", c, len(seen), len(want))
				}
				if rs.Contains(c) && c != rs[0].Gateway && want[c.String()] && got[len(got)-1] != c.String() {
					t.Fatalf("cursor %s is not visited last: %v", c, got)
				}
			}
		})
	}
}
