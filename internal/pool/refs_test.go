package pool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestParseRefs(t *testing.T) {
	tests := []struct {
		in, want, field string
	}{
		{in: `["db",{"name":"web","subnet":"10.211.1.0/24"}]`, want: `[{"name":"db"},{"name":"web","subnet":"10.211.1.0/24"}]`},
		{in: `[{"name":"a","requested_ip":"10.211.1.9","subnet":"10.211.1.0/24"}]`, want: `[{"name":"a","requested-ip":"10.211.1.9","subnet":"10.211.1.0/24"}]`},
		{in: ``, field: "f"},
		{in: `[]`, field: "f"},
		{in: `"db"`, field: "f"},
		{in: `[""]`, field: "f[0].name"},
		{in: `["../etc"]`, field: "f[0].name"},
		{in: `["a","a"]`, field: "f[1].name"},
		{in: `["a",{"name":"a"}]`, field: "f[1].name"},
		{in: `[5]`, field: "f"},
	}
	for _, tt := range tests {
		pools, err := ParseRefs(json.RawMessage(tt.in), "f")
		if tt.field != "" {
			e := cnierr.As(err)
			if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, tt.field) {
				t.Errorf("%s: %v, want code 7 naming %s", tt.in, err, tt.field)
			}
			continue
		}
		got, _ := json.Marshal(pools)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}
