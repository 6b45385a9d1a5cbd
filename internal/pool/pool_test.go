package pool

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestPoolExclude(t *testing.T) {
	tests := []struct {
		name, pools string
		excluded    []string // of pools[0], when accepted
		wantErr     string   // field a code-7 error must name, with its value
		value       string
	}{
		{"addresses and cidrs", `[{"name":"p","subnet":"10.212.0.0/24","exclude":["10.212.0.5","10.212.0.64/26","fd00:212::1"]}]`,
			[]string{"10.212.0.5", "10.212.0.64", "10.212.0.127", "fd00:212::1"}, "", ""},
		{"without ranges", `[{"name":"p","exclude":["10.212.0.5"]}]`, []string{"10.212.0.5"}, "", ""},
		{"malformed", `[{"name":"a"},{"name":"p","exclude":["10.212.0.5","10.212.0.300"]}]`, nil, "ipam.pools[1].exclude[1]", "10.212.0.300"},
		{"host bits", `[{"name":"p","exclude":["10.212.0.5/24"]}]`, nil, "ipam.pools[0].exclude[0]", "10.212.0.5/24"},
		{"not strings", `[{"name":"p","exclude":[5]}]`, nil, "ipam.pools", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools, err := ParseList([]byte(tt.pools), "ipam.pools")
			if tt.wantErr != "" {
				e := cnierr.As(err)
				if e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, tt.wantErr) || !strings.Contains(e.Details, tt.value) {
					t.Fatalf("error %+v, want code 7 naming %s=%s", e, tt.wantErr, tt.value)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ex, err := pools[0].Exclusions("p")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.excluded {
				if !ex.Contains(netip.MustParseAddr(s)) {
					t.Errorf("%s not excluded", s)
				}
			}
			if ex.Contains(netip.MustParseAddr("10.212.0.6")) {
				t.Errorf("10.212.0.6 excluded")
			}
		})
	}
}
