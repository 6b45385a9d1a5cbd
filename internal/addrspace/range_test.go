package addrspace

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name    string
		cfg     RangeConfig
		want    Range
		wantErr string // field named in the error; "" means success
	}{
		{"readme v4 explicit", RangeConfig{Subnet: "10.10.0.0/16", RangeStart: "10.10.1.20", RangeEnd: "10.10.3.50", Gateway: "10.10.0.254"},
			Range{netip.MustParsePrefix("10.10.0.0/16"), mustAddr("10.10.1.20"), mustAddr("10.10.3.50"), mustAddr("10.10.0.254")}, ""},
		{"readme v4 defaults", RangeConfig{Subnet: "172.16.5.0/24"},
			Range{netip.MustParsePrefix("172.16.5.0/24"), mustAddr("172.16.5.1"), mustAddr("172.16.5.254"), mustAddr("172.16.5.1")}, ""},
		{"readme v6", RangeConfig{Subnet: "3ffe:ffff:0:01ff::/64", RangeStart: "3ffe:ffff:0:01ff::0010", RangeEnd: "3ffe:ffff:0:01ff::0020"},
			Range{netip.MustParsePrefix("3ffe:ffff:0:1ff::/64"), mustAddr("3ffe:ffff:0:1ff::10"), mustAddr("3ffe:ffff:0:1ff::20"), mustAddr("3ffe:ffff:0:1ff::1")}, ""},
		{"v6 default end is last address", RangeConfig{Subnet: "fd00::/120"},
			Range{netip.MustParsePrefix("fd00::/120"), mustAddr("fd00::1"), mustAddr("fd00::ff"), mustAddr("fd00::1")}, ""},
		{"v4 /30", RangeConfig{Subnet: "10.0.0.4/30"},
			Range{netip.MustParsePrefix("10.0.0.4/30"), mustAddr("10.0.0.5"), mustAddr("10.0.0.6"), mustAddr("10.0.0.5")}, ""},
		{"v6 /126", RangeConfig{Subnet: "fd00::/126"},
			Range{netip.MustParsePrefix("fd00::/126"), mustAddr("fd00::1"), mustAddr("fd00::3"), mustAddr("fd00::1")}, ""},
		{"v4-mapped addresses unmapped", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "::ffff:10.0.0.10", Gateway: "::ffff:10.0.0.254"},
			Range{netip.MustParsePrefix("10.0.0.0/24"), mustAddr("10.0.0.10"), mustAddr("10.0.0.254"), mustAddr("10.0.0.254")}, ""},
		{"missing subnet", RangeConfig{}, Range{}, "r.subnet"},
		{"bad cidr", RangeConfig{Subnet: "10.0.0.0"}, Range{}, "r.subnet"},
		{"host bits", RangeConfig{Subnet: "10.0.0.1/24"}, Range{}, "r.subnet"},
		{"v4 /31 too small", RangeConfig{Subnet: "10.0.0.0/31"}, Range{}, "r.subnet"},
		{"v4 /32 too small", RangeConfig{Subnet: "10.0.0.0/32"}, Range{}, "r.subnet"},
		{"v6 /127 too small", RangeConfig{Subnet: "fd00::/127"}, Range{}, "r.subnet"},
		{"start not an ip", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "10.0.0"}, Range{}, "r.rangeStart"},
		{"start outside", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "10.0.1.1"}, Range{}, "r.rangeStart"},
		{"start wrong family", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "fd00::1"}, Range{}, "r.rangeStart"},
		// host-local accepts these; the addresses are never handed out (Usable).
		{"start network address", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.0"},
			Range{netip.MustParsePrefix("10.0.0.0/24"), mustAddr("10.0.0.0"), mustAddr("10.0.0.254"), mustAddr("10.0.0.1")}, ""},
		{"v6 start network address", RangeConfig{Subnet: "fd00::/120", RangeStart: "fd00::"},
			Range{netip.MustParsePrefix("fd00::/120"), mustAddr("fd00::"), mustAddr("fd00::ff"), mustAddr("fd00::1")}, ""},
		{"end outside", RangeConfig{Subnet: "10.0.0.0/24", RangeEnd: "10.0.1.1"}, Range{}, "r.rangeEnd"},
		{"end broadcast", RangeConfig{Subnet: "10.0.0.0/24", RangeEnd: "10.0.0.255"},
			Range{netip.MustParsePrefix("10.0.0.0/24"), mustAddr("10.0.0.1"), mustAddr("10.0.0.255"), mustAddr("10.0.0.1")}, ""},
		{"start network end broadcast", RangeConfig{Subnet: "10.0.0.0/30", RangeStart: "10.0.0.0", RangeEnd: "10.0.0.3"},
			Range{netip.MustParsePrefix("10.0.0.0/30"), mustAddr("10.0.0.0"), mustAddr("10.0.0.3"), mustAddr("10.0.0.1")}, ""},
		{"start after end", RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.50", RangeEnd: "10.0.0.40"}, Range{}, "r.rangeEnd"},
		{"gateway outside the subnet (routed set-ups)", RangeConfig{Subnet: "10.0.0.0/24", Gateway: "169.254.1.1"},
			Range{netip.MustParsePrefix("10.0.0.0/24"), mustAddr("10.0.0.1"), mustAddr("10.0.0.254"), mustAddr("169.254.1.1")}, ""},
		{"v6 gateway outside the subnet", RangeConfig{Subnet: "fd00::/120", Gateway: "fe80::1"},
			Range{netip.MustParsePrefix("fd00::/120"), mustAddr("fd00::1"), mustAddr("fd00::ff"), mustAddr("fe80::1")}, ""},
		{"v4-mapped v6 subnet", RangeConfig{Subnet: "::ffff:10.77.0.0/120"}, Range{}, "r.subnet"},
		{"v4-mapped v6 subnet, /96 and up", RangeConfig{Subnet: "::ffff:0.0.0.0/96"}, Range{}, "r.subnet"},
		{"gateway bad", RangeConfig{Subnet: "10.0.0.0/24", Gateway: "x"}, Range{}, "r.gateway"},
		{"gateway wrong family", RangeConfig{Subnet: "fd00::/64", Gateway: "10.0.0.1"}, Range{}, "r.gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.Canonicalize("r")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got != tt.want {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			if e := configErr(t, err); e.Field != tt.wantErr {
				t.Fatalf("error %q names %s, want %s", err, e.Field, tt.wantErr)
			}
		})
	}
}

// configErr is err as a *ConfigError (what callers report as code 7); the
// test fails unless it is one.
func configErr(t *testing.T, err error) *ConfigError {
	t.Helper()
	var e *ConfigError
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *ConfigError", err)
	}
	return e
}

func TestParseRangeSet(t *testing.T) {
	tests := []struct {
		name      string
		cfgs      []RangeConfig
		wantErr   string
		wantRange string
	}{
		{"single", []RangeConfig{{Subnet: "10.0.0.0/24"}}, "", "10.0.0.1-10.0.0.254"},
		{"two disjoint", []RangeConfig{{Subnet: "10.0.0.0/24"}, {Subnet: "10.0.1.0/24", RangeStart: "10.0.1.10", RangeEnd: "10.0.1.20"}}, "",
			"10.0.0.1-10.0.0.254,10.0.1.10-10.0.1.20"},
		{"same subnet disjoint ranges", []RangeConfig{{Subnet: "10.0.0.0/24", RangeEnd: "10.0.0.9"}, {Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10"}}, "",
			"10.0.0.1-10.0.0.9,10.0.0.10-10.0.0.254"},
		{"empty", nil, "s", ""},
		{"bad member named", []RangeConfig{{Subnet: "10.0.0.0/24"}, {Subnet: "bogus"}}, "s[1].subnet", ""},
		{"mixed families", []RangeConfig{{Subnet: "10.0.0.0/24"}, {Subnet: "fd00::/64"}}, "s[1].subnet", ""},
		{"overlap identical", []RangeConfig{{Subnet: "10.0.0.0/24"}, {Subnet: "10.0.0.0/24"}}, "s[1]", ""},
		{"overlap contained", []RangeConfig{{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10", RangeEnd: "10.0.0.20"}, {Subnet: "10.0.0.0/16"}}, "s[1]", ""},
		{"overlap partial", []RangeConfig{{Subnet: "10.0.0.0/24", RangeEnd: "10.0.0.20"}, {Subnet: "10.0.0.0/24", RangeStart: "10.0.0.20"}}, "s[1]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseRangeSet("s", tt.cfgs)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rs.String() != tt.wantRange {
					t.Fatalf("String() = %q, want %q", rs.String(), tt.wantRange)
				}
				return
			}
			if e := configErr(t, err); e.Field != tt.wantErr {
				t.Fatalf("error %q names %s, want %s", err, e.Field, tt.wantErr)
			}
		})
	}
}

func mustSet(t testing.TB, cfgs ...RangeConfig) RangeSet {
	t.Helper()
	rs, err := ParseRangeSet("test", cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestCheckDisjoint(t *testing.T) {
	v4a := mustSet(t, RangeConfig{Subnet: "10.0.0.0/24"})
	v4b := mustSet(t, RangeConfig{Subnet: "10.0.1.0/24"})
	v4overlap := mustSet(t, RangeConfig{Subnet: "10.0.0.0/16", RangeStart: "10.0.0.100", RangeEnd: "10.0.0.100"})
	v6 := mustSet(t, RangeConfig{Subnet: "fd00::/64"})
	field := func(set, idx int) string { return fmt.Sprintf("ranges[%d][%d]", set, idx) }
	if err := CheckDisjoint([]RangeSet{v4a, v4b, v6}, field); err != nil {
		t.Fatal(err)
	}
	err := CheckDisjoint([]RangeSet{v4a, v6, v4overlap}, field)
	if e := configErr(t, err); e.Field != "ranges[2][0]" || !strings.Contains(e.Reason, "ranges[0][0]") {
		t.Fatalf("error %q does not name both ranges", err)
	}
}

func TestRangeSetLookup(t *testing.T) {
	rs := mustSet(t, RangeConfig{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10", RangeEnd: "10.0.0.20"}, RangeConfig{Subnet: "10.0.1.0/24"})
	for _, tt := range []struct {
		ip   string
		want int // index of range, -1 none
	}{{"10.0.0.9", -1}, {"10.0.0.10", 0}, {"10.0.0.20", 0}, {"10.0.0.21", -1}, {"10.0.1.1", 1}, {"::ffff:10.0.1.1", 1}, {"10.0.1.255", -1}, {"fd00::1", -1}} {
		r, ok := rs.RangeFor(mustAddr(tt.ip))
		if ok != (tt.want >= 0) || ok != rs.Contains(mustAddr(tt.ip)) || (ok && r != rs[tt.want]) {
			t.Errorf("RangeFor(%s) = %v,%v want index %d", tt.ip, r, ok, tt.want)
		}
	}
}
