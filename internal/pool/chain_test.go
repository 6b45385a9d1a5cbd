package pool

import (
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestCatalogResolve(t *testing.T) {
	defs := map[string]Definition{"shared": {}, "last": {}, "d1": {Overflow: "d2"}, "d2": {Overflow: "shared"}, "loop": {Overflow: "loop2"}, "loop2": {Overflow: "loop"}}
	cat := Catalog{Pools: []Pool{{Name: "inline", Subnet: "10.9.0.0/24", Overflow: "d1"}, {Name: "shared", Overflow: "last"}}, Defs: defs}
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
