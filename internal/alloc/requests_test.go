package alloc_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// RequestPools places requests on Pool objects by the rule AddTargets
// assigns them with: each pool in order takes the first unused address
// its range set (not its subnet) holds.
func TestRequestPools(t *testing.T) {
	defs, err := pool.NewDefinitions("ipam.poolDefinitions", map[string]json.RawMessage{
		"def": json.RawMessage(`{"ranges":[{"subnet":"10.5.0.0/24"}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	wide := pool.Pool{Name: "wide", Subnet: "10.4.0.0/16"}
	narrow := pool.Pool{Name: "narrow", Subnet: "10.4.1.0/24"}
	for _, tt := range []struct {
		name  string
		pools []pool.Pool
		ips   string
		want  string // each pool as "name=requested-ip"
		code  uint
	}{
		{name: "inline and defined", pools: []pool.Pool{wide, {Name: "def"}}, ips: "10.5.0.9,10.4.0.7", want: "wide=10.4.0.7 def=10.5.0.9"},
		{name: "overlapping pools: the first takes the first it holds", pools: []pool.Pool{wide, narrow}, ips: "10.4.2.5,10.4.1.5",
			want: "wide=10.4.2.5 narrow=10.4.1.5"},
		{name: "a pool's own request stays, and is no unserved one", pools: []pool.Pool{{Name: "own", Subnet: "10.4.0.0/24", RequestedIP: "10.4.0.4"}},
			ips: "10.4.0.4", want: "own=10.4.0.4"},
		{name: "in the subnet, outside the range", pools: []pool.Pool{{Name: "r", Subnet: "10.4.0.0/24", RangeStart: "10.4.0.100"}}, ips: "10.4.0.7", code: 101},
		{name: "two for one pool", pools: []pool.Pool{narrow}, ips: "10.4.1.5,10.4.1.6", code: 101},
		{name: "a pool nothing defines holds none", pools: []pool.Pool{{Name: "ghost"}}, ips: "10.4.1.5", code: 101},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ips []netip.Addr
			for _, s := range strings.Split(tt.ips, ",") {
				ips = append(ips, netip.MustParseAddr(s))
			}
			pools := append([]pool.Pool(nil), tt.pools...)
			err := alloc.RequestPools(pools, defs, ips, "from")
			if tt.code != 0 {
				if e := cnierr.As(err); e == nil || e.Code != tt.code || !strings.Contains(e.Details, "from=") {
					t.Fatalf("error %+v, want code %d naming its source", e, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pools {
				got = append(got, p.Name+"="+p.RequestedIP)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %s, want %s", strings.Join(got, " "), tt.want)
			}
		})
	}
}
