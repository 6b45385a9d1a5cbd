package addrspace

import (
	"math"
	"testing"
)

func TestRangeSetSize(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfgs    []RangeConfig
		exclude []string
		want    uint64
		exact   bool
	}{
		{"/24 less network, gateway, broadcast", []RangeConfig{{Subnet: "10.0.0.0/24"}}, nil, 253, true},
		{"/29", []RangeConfig{{Subnet: "10.0.0.0/29"}}, nil, 5, true},
		{"gateway outside the range", []RangeConfig{{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10", RangeEnd: "10.0.0.19"}}, nil, 10, true},
		{"two ranges", []RangeConfig{{Subnet: "10.0.0.0/29"}, {Subnet: "10.0.1.0/29"}}, nil, 10, true},
		{"exclusions inside and across the edges", []RangeConfig{{Subnet: "10.0.0.0/24"}}, []string{"10.0.0.0/28", "10.0.0.100", "10.0.0.255", "10.9.0.0/16"}, 253 - 14 - 1, true},
		{"an excluded gateway counts once", []RangeConfig{{Subnet: "10.0.0.0/29"}}, []string{"10.0.0.1"}, 5, true},
		{"another family's exclusions", []RangeConfig{{Subnet: "10.0.0.0/29"}}, []string{"fd00::/8"}, 5, true},
		{"IPv6 /120 (no broadcast)", []RangeConfig{{Subnet: "fd00::/120"}}, nil, 254, true},
		{"IPv6 /64 fits", []RangeConfig{{Subnet: "fd00::/64"}}, nil, math.MaxUint64 - 1, true},
		{"IPv6 /48 saturates", []RangeConfig{{Subnet: "fd00::/48"}}, nil, math.MaxUint64, false},
	} {
		rs, err := ParseRangeSet("r", tt.cfgs)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := ParseExclusions("x", tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got, exact := rs.Size(ex); got != tt.want || exact != tt.exact {
			t.Errorf("%s: size %d (exact %v), want %d (%v)", tt.name, got, exact, tt.want, tt.exact)
		}
	}
}
