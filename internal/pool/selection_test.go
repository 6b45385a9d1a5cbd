package pool

import (
	"bytes"
	"encoding/json"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"
)

// A selection converts like any result, keeping its pools; at 0.1.0 and
// 0.2.0, whose results cannot be converted without an address, an ADD's
// address-less selection becomes its pools under the bare version.
func TestSelectionVersions(t *testing.T) {
	withIPs := &current.Result{CNIVersion: "1.0.0"}
	if err := json.Unmarshal([]byte(`{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/24"}]}`), withIPs); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, version string
		inner         *current.Result
		want          string
	}{
		{"1.0.0 passes", "1.0.0", &current.Result{CNIVersion: "1.0.0"}, `{"cniVersion":"1.0.0","pools":[{"name":"p"}]}`},
		{"0.3.1 converted", "0.3.1", &current.Result{CNIVersion: "1.0.0"}, `{"cniVersion":"0.3.1","dns":{},"pools":[{"name":"p"}]}`},
		{"0.2.0 without addresses", "0.2.0", &current.Result{CNIVersion: "1.0.0"}, `{"cniVersion":"0.2.0","dns":{},"pools":[{"name":"p"}]}`},
		{"0.1.0 without addresses", "0.1.0", &current.Result{CNIVersion: "1.0.0"}, `{"cniVersion":"0.1.0","dns":{},"pools":[{"name":"p"}]}`},
		{"0.2.0 with an address", "0.2.0", withIPs, `{"cniVersion":"0.2.0","dns":{},"ip4":{"ip":"10.1.0.5/24"},"pools":[{"name":"p"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Selection{Inner: tt.inner, Pools: []Pool{{Name: "p"}}}
			conv, err := s.GetAsVersion(tt.version)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := conv.PrintTo(&buf); err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			if string(got) != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The sticky key survives every conversion, and is printed only when set.
func TestSelectionSticky(t *testing.T) {
	for _, v := range []string{"1.1.0", "0.4.0", "0.2.0"} {
		s := &Selection{Inner: &current.Result{CNIVersion: "1.1.0"}, Pools: []Pool{{Name: "p"}}, Sticky: &Sticky{Key: "db/pg-0"}}
		conv, err := s.GetAsVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := conv.PrintTo(&buf); err != nil {
			t.Fatal(err)
		}
		var out struct {
			Sticky json.RawMessage `json:"sticky"`
		}
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil || string(out.Sticky) != `{"key":"db/pg-0"}` {
			t.Errorf("%s: printed %s, want sticky {\"key\":\"db/pg-0\"}", v, buf.Bytes())
		}
	}
	b, _ := json.Marshal(&Selection{Inner: &current.Result{CNIVersion: "1.1.0"}, Pools: []Pool{{Name: "p"}}})
	if bytes.Contains(b, []byte("sticky")) {
		t.Errorf("no key printed %s", b)
	}
}
