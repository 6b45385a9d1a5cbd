package pool

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestCatalogResolve(t *testing.T) {
	defs := map[string]Definition{"shared": {}, "last": {}, "d1": {Overflow: "d2"}, "d2": {Overflow: "shared"}, "loop": {Overflow: "loop2"}, "loop2": {Overflow: "loop"}}
	cat := Catalog{Pools: []Pool{{Name: "inline", Subnet: "10.9.0.0/24", Overflow: "d1"}, {Name: "shared", Overflow: "last"}}, Overflows: Overflows(defs)}
	for _, tc := range []struct {
		name string
		p    Pool
		want []string
		err  string
	}{
		{"no overflow", Pool{Name: "x"}, []string{"x"}, ""},
		{"through objects and definitions", Pool{Name: "ns-a", Overflow: "inline"}, []string{"ns-a", "inline", "d1", "d2", "shared", "last"}, ""},
		{"a definition's own overflow", Pool{Name: "d2"}, []string{"d2", "shared", "last"}, ""},
		{"unknown", Pool{Name: "a", Overflow: "nowhere"}, nil, `a → nowhere: no pool "nowhere"`},
		{"cycle", Pool{Name: "loop"}, nil, "loop → loop2 → loop"},
		{"into a cycle", Pool{Name: "a", Overflow: "loop"}, nil, "a → loop → loop2 → loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cat.Resolve("f", tc.p)
			if tc.err != "" {
				if e := cnierr.As(err); err == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Details, tc.err) || !strings.Contains(e.Details, "f.overflow") {
					t.Fatalf("err = %v, want 7 with %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got.Names(), tc.want) {
				t.Fatalf("chain = %v %v, want %v", got.Names(), err, tc.want)
			}
			for _, q := range got.OverflowPools {
				if len(q.OverflowPools) != 0 {
					t.Errorf("a chain member carries a chain: %+v", q)
				}
			}
		})
	}
	if got, _ := cat.Resolve("f", Pool{Name: "ns-a", Overflow: "inline"}); got.OverflowPools[0].Subnet != "10.9.0.0/24" {
		t.Errorf("an object's ranges lost: %+v", got.OverflowPools[0])
	}
}

// ParseOverflows reads exactly what ParseDefinitions says of each entry's
// overflow, without the ranges, and refuses the same bad names.
func TestParseOverflows(t *testing.T) {
	for _, tc := range []struct {
		name string
		defs map[string]json.RawMessage
		want map[string]string
		err  string
	}{
		{"object, bare range set", map[string]json.RawMessage{
			"a": json.RawMessage(`{"ranges":[{"subnet":"10.1.0.0/24"}],"overflow":"b"}`),
			"b": json.RawMessage(`[{"subnet":"10.2.0.0/24"}]`),
		}, map[string]string{"a": "b", "b": ""}, ""},
		{"overflow not a name", map[string]json.RawMessage{"a": json.RawMessage(`{"ranges":[],"overflow":"../x"}`)}, nil, "ipam.poolDefinitions.a.overflow"},
		{"entry not a name", map[string]json.RawMessage{"_a": json.RawMessage(`[]`)}, nil, "ipam.poolDefinitions"},
		{"overflow not a string", map[string]json.RawMessage{"a": json.RawMessage(`{"overflow":3}`)}, nil, "ipam.poolDefinitions.a.overflow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOverflows("ipam.poolDefinitions", tc.defs)
			if tc.err != "" {
				if e := cnierr.As(err); err == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Details+e.Msg, tc.err) {
					t.Fatalf("err = %v, want 7 naming %s", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
			full, err := ParseDefinitions("ipam.poolDefinitions", tc.defs)
			if err != nil || !maps.Equal(Overflows(full), got) {
				t.Fatalf("ParseDefinitions says %v %v", Overflows(full), err)
			}
		})
	}
}
