package alloc_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func TestPoolDefinitionForms(t *testing.T) {
	tests := []struct {
		name, defs string
		set        string   // the definition's range set, host-local's format
		excluded   []string // of pool p
		code       uint
		detail     string
	}{
		{name: "bare range set", defs: `{"p":[{"subnet":"10.212.0.0/29"}]}`, set: "10.212.0.1-10.212.0.6"},
		{name: "object with exclude", defs: `{"p":{"ranges":[{"subnet":"10.212.0.0/29"}],"exclude":["10.212.0.3","10.212.0.4/31"]}}`,
			set: "10.212.0.1-10.212.0.6", excluded: []string{"10.212.0.3", "10.212.0.4", "10.212.0.5"}},
		{name: "object without exclude", defs: `{"p":{"ranges":[{"subnet":"fd00:212::/126"}]}}`, set: "fd00:212::1-fd00:212::3"},
		{name: "object without ranges", defs: `{"p":{"exclude":["10.212.0.3"]}}`, code: 7, detail: "ipam.poolDefinitions.p.ranges"},
		{name: "empty ranges", defs: `{"p":{"ranges":[]}}`, code: 7, detail: "ipam.poolDefinitions.p.ranges"},
		{name: "malformed exclude", defs: `{"p":{"ranges":[{"subnet":"10.212.0.0/29"}],"exclude":["10.212.0.3","10.212.0.0/33"]}}`,
			code: 7, detail: "ipam.poolDefinitions.p.exclude[1]=10.212.0.0/33"},
		{name: "exclude not an array", defs: `{"p":{"ranges":[{"subnet":"10.212.0.0/29"}],"exclude":"10.212.0.3"}}`,
			code: 7, detail: "ipam.poolDefinitions.p.exclude"},
		{name: "bad range in object", defs: `{"p":{"ranges":[{"subnet":"10.212.0.1/29"}]}}`, code: 7, detail: "ipam.poolDefinitions.p.ranges[0].subnet"},
		{name: "bad range bare", defs: `{"p":[{"subnet":"10.212.0.1/29"}]}`, code: 7, detail: "ipam.poolDefinitions.p[0].subnet"},
		{name: "neither array nor object", defs: `{"p":"10.212.0.0/29"}`, code: 7, detail: "ipam.poolDefinitions.p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mustConfig(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"poolDefinitions":`+tt.defs+`},
				"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"p"}]}}`, "")
			var ts []alloc.Target
			if err == nil {
				ts, err = c.Targets()
			}
			if tt.code != 0 {
				e := cnierr.As(err)
				if e == nil || e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.detail) {
					t.Fatalf("error = %+v, want code %d mentioning %q", e, tt.code, tt.detail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ts[0].Set.String(); got != tt.set {
				t.Errorf("range set = %s, want %s", got, tt.set)
			}
			if ts[0].Exclude.Runs() == 0 != (len(tt.excluded) == 0) {
				t.Errorf("exclusions %+v, want %v", ts[0].Exclude, tt.excluded)
			}
			for _, s := range tt.excluded {
				if !ts[0].Exclude.Contains(netip.MustParseAddr(s)) {
					t.Errorf("%s not excluded", s)
				}
			}
		})
	}
}

// A pool's exclusions are its Pool object's plus its definition's,
// whichever of the two supplies the ranges.
func TestTargetExclusionsUnion(t *testing.T) {
	c, err := mustConfig(t, `{"cniVersion":"1.0.0","name":"n","ipam":{"poolDefinitions":{
			"def":{"ranges":[{"subnet":"10.212.1.0/24"}],"exclude":["10.212.1.9"]},
			"inl":{"ranges":[{"subnet":"10.212.3.0/24"}],"exclude":["10.212.2.7"]}}},
		"prevResult":{"cniVersion":"1.0.0","pools":[
			{"name":"def","exclude":["10.212.1.10"]},
			{"name":"inl","subnet":"10.212.2.0/24","exclude":["10.212.2.8/31"]},
			{"name":"bare","subnet":"10.212.4.0/24"}]}}`, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.Targets()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"10.212.1.9", "10.212.1.10"}, {"10.212.2.7", "10.212.2.8", "10.212.2.9"}, nil} {
		for _, s := range want {
			if !ts[i].Exclude.Contains(netip.MustParseAddr(s)) {
				t.Errorf("%s: %s not excluded", ts[i].Label, s)
			}
		}
		if got := ts[i].Exclude.Runs(); (got == 0) != (want == nil) {
			t.Errorf("%s: %d runs, want %v", ts[i].Label, got, want)
		}
	}
	if got := ts[1].Set.String(); got != "10.212.2.1-10.212.2.254" {
		t.Errorf("inline ranges lost to the definition: %s", got)
	}
	// A malformed exclude in the selector's Pool object is 7 naming it.
	c.Pools[2].Exclude = []string{"10.212.4.1/23"}
	_, err = c.Targets()
	if e := cnierr.As(err); e == nil || e.Code != 7 || !strings.Contains(e.Msg+e.Details, "prevResult.pools[2].exclude[0]") {
		t.Fatalf("error = %+v", e)
	}
}

// An ADD parses the definitions of the pools it may allocate from (the
// selection's and their chains'), never the rest: on a cluster with a pool
// per namespace, every other tenant's entry costs it nothing, and a
// broken one fails only the ADDs that use it (and `cniplugins validate`).
// Names and chains are checked for every entry, on every command.
func TestPoolDefinitionsParsedWhenUsed(t *testing.T) {
	conf := func(pools string) string {
		return `{"cniVersion":"1.0.0","name":"n","ipam":{"poolDefinitions":{
			"a":{"ranges":[{"subnet":"10.212.5.0/24"}],"overflow":"b"},
			"b":[{"subnet":"10.212.6.0/24"}],
			"broken":[{"subnet":"10.212.7.1/24"}]}},
		"prevResult":{"cniVersion":"1.0.0","pools":` + pools + `}}`
	}
	c, err := mustConfig(t, conf(`[{"name":"a"}]`), "")
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := c.Targets(); err != nil || len(ts) != 1 || len(ts[0].Overflow) != 1 {
		t.Fatalf("targets of a → b beside a broken definition: %v %v", ts, err)
	}
	c, err = mustConfig(t, conf(`[{"name":"broken"}]`), "")
	if err == nil {
		_, err = c.Targets()
	}
	if e := cnierr.As(err); e == nil || e.Code != 7 || !strings.Contains(e.Details, "ipam.poolDefinitions.broken[0].subnet") {
		t.Fatalf("the broken definition, used: %+v", e)
	}
	// A chain is checked whether used or not.
	_, err = mustConfig(t, strings.Replace(conf(`[{"name":"a"}]`), `"broken":[{"subnet":"10.212.7.1/24"}]`, `"broken":{"overflow":"nowhere","ranges":[]}`, 1), "")
	if e := cnierr.As(err); e == nil || e.Code != 7 || !strings.Contains(e.Details, "nowhere") {
		t.Fatalf("an unused definition's unknown overflow: %+v", e)
	}
}

// An ADD's overflow pools are read when needed: TargetFor (CHECK, a DEL
// from prevResult) still places an address of a chain pool, and a chain
// that leaves its family is 7 there and in ResolveChains (validate).
func TestLazyChainTargets(t *testing.T) {
	conf := func(b string) string {
		return `{"cniVersion":"1.0.0","name":"n","ipam":{"poolDefinitions":{
			"a":{"ranges":[{"subnet":"10.212.8.0/30"}],"overflow":"b"},"b":[{"subnet":"` + b + `"}]}},
		"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"a"}]}}`
	}
	c, err := mustConfig(t, conf("10.212.9.0/24"), "")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.AddTargets()
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := alloc.TargetFor(ts, netip.MustParseAddr("10.212.9.7"))
	if err != nil || !ok || got.Scope.Pool != "b" || !got.Set.Contains(netip.MustParseAddr("10.212.9.7")) {
		t.Fatalf("TargetFor an address of the overflow pool: %+v %v %v", got, ok, err)
	}
	c, err = mustConfig(t, conf("fd00:212::/120"), "")
	if err != nil {
		t.Fatal(err)
	}
	if ts, err = c.AddTargets(); err != nil {
		t.Fatalf("AddTargets reads no overflow ranges, yet: %v", err)
	}
	for name, err := range map[string]error{"ResolveChains": alloc.ResolveChains(ts), "TargetFor": func() error {
		_, _, err := alloc.TargetFor(ts, netip.MustParseAddr("fd00:212::7"))
		return err
	}()} {
		if e := cnierr.As(err); e == nil || e.Code != 7 || !strings.Contains(e.Details, "a → b") {
			t.Errorf("%s of a chain leaving its family: %+v", name, e)
		}
	}
}
