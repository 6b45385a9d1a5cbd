package pool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// A selection handed over as built (an in-process selector's) reads as
// its printed bytes do: the same pools and quota, the same refusals.
func TestPrevBuiltReadsAsItsBytes(t *testing.T) {
	for _, tt := range []struct {
		name string
		sel  *Selection
	}{
		{"pools", &Selection{Pools: []Pool{{Name: "a", Subnet: "10.1.0.0/24"}, {Name: "b", RequestedIP: "10.2.0.9"}}}},
		{"a chain and a quota", &Selection{
			Pools: []Pool{{Name: "head", Overflow: "spill", OverflowPools: []Pool{{Name: "spill", Ranges: nil}}}},
			Quota: &Quota{Tenant: "namespace=a", Rule: "ipam.rules[0]", Max: 3},
		}},
		{"a quota counted in other pools", &Selection{
			Pools: []Pool{{Name: "a"}},
			Quota: &Quota{Tenant: "team-a/annotation:team=blue", Rule: "ipam.rules[1]", Max: 2, Pools: []string{"a", "b", "spill"}},
		}},
		{"a quota counted in a bad pool", &Selection{Pools: []Pool{{Name: "a"}}, Quota: &Quota{Tenant: "namespace=a", Max: 1, Pools: []string{"a", "../x"}}}},
		{"no pools", &Selection{}},
		{"a pool twice", &Selection{Pools: []Pool{{Name: "a"}, {Name: "a"}}}},
		{"a bad name", &Selection{Pools: []Pool{{Name: "../x"}}}},
		{"a bad quota", &Selection{Pools: []Pool{{Name: "a"}}, Quota: &Quota{Tenant: "", Max: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.sel.Inner = &current.Result{CNIVersion: "1.1.0"}
			var out bytes.Buffer
			if err := tt.sel.PrintTo(&out); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "n", "prevResult": json.RawMessage(out.Bytes())})
			if err != nil {
				t.Fatal(err)
			}
			fromBytes, err := netconf.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			built := *fromBytes
			built.PrevBuilt = tt.sel
			for _, read := range []struct {
				what string
				f    func(*netconf.Envelope) (any, error)
			}{
				{"pools", func(e *netconf.Envelope) (any, error) {
					ps, ok, err := FromPrevResult(e)
					return struct {
						Pools []Pool
						OK    bool
					}{ps, ok}, err
				}},
				{"quota", func(e *netconf.Envelope) (any, error) { return QuotaFromPrevResult(e) }},
			} {
				want, werr := read.f(fromBytes)
				got, gerr := read.f(&built)
				if cnierr.Code(werr) != cnierr.Code(gerr) || !reflect.DeepEqual(normal(got), normal(want)) {
					t.Errorf("%s: built gives %+v (%v), bytes %+v (%v)", read.what, got, gerr, want, werr)
				}
			}
		})
	}
}

// normal is v as JSON, so that a nil and an empty list compare alike.
func normal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The quota's hand-written JSON is what encoding/json would write of the
// struct, and reads back as it was.
func TestQuotaJSON(t *testing.T) {
	for _, q := range []Quota{
		{Tenant: "namespace=a", Rule: "ipam.rules[0]", Max: 20},
		{Tenant: `arg:K="x\y"<&>` + "\u2028", Rule: "", Max: 0},
		{Tenant: "ns/arg:K=v", Rule: "ipam.rules[3]", Max: 4, Pools: []string{"a", "b"}},
	} {
		got, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		type plain Quota // without the method
		want, _ := json.Marshal(plain(q))
		if string(got) != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
		var back Quota
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, q) {
			t.Errorf("%s reads back as %+v (%v)", got, back, err)
		}
	}
}
