package addrspace

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func mustExclude(t testing.TB, entries ...string) Exclusions {
	t.Helper()
	ex, err := ParseExclusions("exclude", entries)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func TestParseExclusions(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		runs    int      // merged runs expected
		in, out []string // addresses that must be / must not be excluded
		wantErr string   // field named in a code-7 error
	}{
		{"none", nil, 0, nil, []string{"10.0.0.1"}, ""},
		{"address", []string{"10.0.0.5"}, 1, []string{"10.0.0.5"}, []string{"10.0.0.4", "10.0.0.6"}, ""},
		{"cidr", []string{"10.0.0.8/29"}, 1, []string{"10.0.0.8", "10.0.0.15"}, []string{"10.0.0.7", "10.0.0.16"}, ""},
		{"adjacent merge", []string{"10.0.0.8/29", "10.0.0.16", "10.0.0.7"}, 1, []string{"10.0.0.7", "10.0.0.16"}, []string{"10.0.0.6", "10.0.0.17"}, ""},
		{"overlap merge", []string{"10.0.0.0/24", "10.0.0.128/25", "10.0.0.3"}, 1, []string{"10.0.0.255"}, []string{"10.0.1.0"}, ""},
		{"gap kept", []string{"10.0.0.1", "10.0.0.3"}, 2, []string{"10.0.0.1", "10.0.0.3"}, []string{"10.0.0.2"}, ""},
		{"both families", []string{"fd00::1", "255.255.255.255", "::/128", "10.0.0.1"}, 4,
			[]string{"fd00::1", "255.255.255.255", "::", "10.0.0.1"}, []string{"fd00::2", "::1", "0.0.0.0"}, ""},
		{"v4 mapped", []string{"::ffff:10.0.0.9", "::ffff:10.0.1.0/120"}, 2, []string{"10.0.0.9", "10.0.1.200"}, []string{"10.0.0.8"}, ""},
		{"v6 prefix", []string{"fd00:212::/64"}, 1, []string{"fd00:212::ffff:ffff:ffff:ffff"}, []string{"fd00:212:0:1::"}, ""},
		{"not an address", []string{"10.0.0.1", "bogus"}, 0, nil, nil, "exclude[1]"},
		{"bad prefix", []string{"10.0.0.0/33"}, 0, nil, nil, "exclude[0]"},
		{"host bits", []string{"10.0.0.1/24"}, 0, nil, nil, "exclude[0]"},
		{"zone", []string{"fe80::1%eth0"}, 0, nil, nil, "exclude[0]"},
		{"empty string", []string{""}, 0, nil, nil, "exclude[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := ParseExclusions("exclude", tt.entries)
			if tt.wantErr != "" {
				if e := configErr(t, err); e.Field != tt.wantErr || e.Value != tt.entries[len(tt.entries)-1] {
					t.Fatalf("error %q does not name %s and its value", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ex.Runs() != tt.runs {
				t.Errorf("runs = %d (%v), want %d", ex.Runs(), ex.runs, tt.runs)
			}
			for _, s := range tt.in {
				if !ex.Contains(mustAddr(s)) {
					t.Errorf("%s not excluded", s)
				}
			}
			for _, s := range tt.out {
				if ex.Contains(mustAddr(s)) {
					t.Errorf("%s excluded", s)
				}
			}
		})
	}
}

func TestExclusionsUnion(t *testing.T) {
	a := mustExclude(t, "10.0.0.1", "10.0.0.10")
	b := mustExclude(t, "10.0.0.2", "::ffff:10.0.0.20")
	u := a.Union(b)
	if u.Runs() != 3 {
		t.Fatalf("union runs = %v", u.runs)
	}
	for _, s := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.10", "10.0.0.20"} {
		if !u.Contains(mustAddr(s)) {
			t.Errorf("%s not in union", s)
		}
	}
	if a.Runs() != 2 || b.Runs() != 2 {
		t.Fatalf("union changed its operands: %v %v", a.runs, b.runs)
	}
	if got := (Exclusions{}).Union(b); got.Runs() != 2 {
		t.Fatalf("empty ∪ b = %v", got.runs)
	}
}

func lapExcluding(rs RangeSet, last netip.Addr, ex Exclusions) []string {
	var out []string
	it := rs.IterExcluding(last, ex)
	for ip, r, ok := it.Next(); ok; ip, r, ok = it.Next() {
		if !r.Contains(ip) {
			panic("address outside its range")
		}
		out = append(out, ip.String())
		if len(out) > 1<<16 {
			panic("lap does not end")
		}
	}
	return out
}

func TestIterExcluding(t *testing.T) {
	two := []RangeConfig{
		{Subnet: "10.0.0.0/28", RangeEnd: "10.0.0.6"},   // gw .1, .2-.6
		{Subnet: "10.0.1.0/29", RangeStart: "10.0.1.4"}, // gw .1 outside, .4-.6
	}
	tests := []struct {
		name    string
		last    string
		exclude []string
		want    []string
	}{
		{"nothing excluded is host-local's order", "10.0.0.3", nil,
			[]string{"10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.1.4", "10.0.1.5", "10.0.1.6", "10.0.0.2", "10.0.0.3"}},
		{"single address", "", []string{"10.0.0.3"},
			[]string{"10.0.0.2", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.1.4", "10.0.1.5", "10.0.1.6"}},
		{"run spanning both ranges", "10.0.0.2", []string{"10.0.0.4/30", "10.0.0.8/29", "10.0.1.0/30", "10.0.1.4"},
			[]string{"10.0.0.3", "10.0.1.5", "10.0.1.6", "10.0.0.2"}},
		{"cursor inside a run", "10.0.0.5", []string{"10.0.0.4/30"},
			[]string{"10.0.1.4", "10.0.1.5", "10.0.1.6", "10.0.0.2", "10.0.0.3"}},
		{"first range wholly excluded", "", []string{"10.0.0.0/28"},
			[]string{"10.0.1.4", "10.0.1.5", "10.0.1.6"}},
		{"excluded gateway changes nothing", "", []string{"10.0.0.1"},
			[]string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.1.4", "10.0.1.5", "10.0.1.6"}},
		{"all but one", "10.0.1.6", []string{"10.0.0.0/24", "10.0.1.4", "10.0.1.6"}, []string{"10.0.1.5"}},
		{"everything", "10.0.0.4", []string{"10.0.0.0/23"}, nil},
		{"everything from no cursor", "", []string{"0.0.0.0/0"}, nil},
		{"other family only", "", []string{"::/0"},
			[]string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.1.4", "10.0.1.5", "10.0.1.6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var last netip.Addr
			if tt.last != "" {
				last = mustAddr(tt.last)
			}
			got := lapExcluding(mustSet(t, two...), last, mustExclude(t, tt.exclude...))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("lap = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestIterExcludingIsFilteredLap: from every cursor, the lap with
// exclusions is exactly the lap without them minus the excluded
// addresses, in the same order — host-local's round robin is untouched.
func TestIterExcludingIsFilteredLap(t *testing.T) {
	rs := mustSet(t,
		RangeConfig{Subnet: "10.0.0.0/27", Gateway: "10.0.0.9"},
		RangeConfig{Subnet: "10.0.1.0/28", RangeStart: "10.0.1.3", RangeEnd: "10.0.1.12"},
		RangeConfig{Subnet: "10.0.2.0/30"})
	exclusions := [][]string{
		{"10.0.0.2"}, {"10.0.0.9"}, {"10.0.0.0/29", "10.0.0.16/28"}, {"10.0.0.30", "10.0.1.0/28"},
		{"10.0.0.0/22"}, {"10.0.2.1", "10.0.2.2"}, {"10.0.0.3", "10.0.0.5", "10.0.0.7", "10.0.1.8/30"},
	}
	cursors := []netip.Addr{{}, mustAddr("10.9.9.9")}
	for _, r := range rs {
		for a := r.Start; a.Compare(r.End) <= 0; a = a.Next() {
			cursors = append(cursors, a)
		}
	}
	for _, entries := range exclusions {
		ex := mustExclude(t, entries...)
		for _, c := range cursors {
			var want []string
			for _, a := range lap(rs, c) {
				if !ex.Contains(mustAddr(a)) {
					want = append(want, a)
				}
			}
			if got := lapExcluding(rs, c, ex); !slices.Equal(got, want) {
				t.Fatalf("exclude %v, cursor %v:\n got %v\nwant %v", entries, c, got, want)
			}
		}
	}
}

// BenchmarkIterExcludedRun: the first candidate of a lap in a /8 whose
// cursor sits just before an excluded run of 2^k addresses, the first free
// address right after it. The cost must be flat in k (a run is skipped in
// one step) and nearly flat in the number of runs (a lookup is a binary
// search), never proportional to the addresses excluded: it is what every
// allocation from a pool with exclusions pays before touching its store.
func BenchmarkIterExcludedRun(b *testing.B) {
	rs := mustSet(b, RangeConfig{Subnet: "10.0.0.0/8"})
	cursor := mustAddr("10.0.0.9")
	b.Run("none", func(b *testing.B) { benchExcluding(b, rs, cursor, Exclusions{}) })
	for _, k := range []int{0, 8, 16, 23} {
		ex := Exclusions{runs: []addrRun{{mustAddr("10.0.0.10"), plus(mustAddr("10.0.0.10"), 1<<k-1)}}}
		b.Run(fmt.Sprintf("run=2^%d", k), func(b *testing.B) { benchExcluding(b, rs, cursor, ex) })
	}
	for _, n := range []int{10, 1_000, 100_000} {
		// The cursor's neighbour starts a run of 2^20 and n single
		// addresses lie further on, none adjacent to another.
		runs := []addrRun{{mustAddr("10.0.0.10"), plus(mustAddr("10.0.0.10"), 1<<20-1)}}
		for i := range n {
			a := plus(mustAddr("10.200.0.0"), uint32(2*i))
			runs = append(runs, addrRun{a, a})
		}
		ex := Exclusions{runs: merge(runs)}
		b.Run(fmt.Sprintf("runs=%d", ex.Runs()), func(b *testing.B) { benchExcluding(b, rs, cursor, ex) })
	}
}

// first is the first address after cursor that ex does not hold.
func first(ex Exclusions, cursor netip.Addr) netip.Addr {
	a := cursor.Next()
	if hi, ok := ex.runEnd(a); ok {
		return hi.Next()
	}
	return a
}

// plus is a+n for an IPv4 address.
func plus(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func benchExcluding(b *testing.B, rs RangeSet, cursor netip.Addr, ex Exclusions) {
	want := first(ex, cursor)
	for b.Loop() {
		if ip, _, ok := rs.IterExcluding(cursor, ex).Next(); !ok || ip != want {
			b.Fatalf("first candidate %s (%v), want %s", ip, ok, want)
		}
	}
}
