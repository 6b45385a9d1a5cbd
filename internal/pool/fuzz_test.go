package pool

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// FuzzParseList: ParseList never panics, fails with code 7 (or 6 for input
// that is not JSON) naming the field, and a list it accepts re-validates:
// parse → marshal → parse gives the same pools. Every accepted pool has a
// valid, unique name, a parseable request and well-formed inline ranges.
func FuzzParseList(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		pools, err := ParseList(raw, "ipam.pools")
		if err != nil {
			e := cnierr.As(err)
			if e.Code != cnierr.CodeInvalidConfig && e.Code != cnierr.CodeDecoding {
				t.Fatalf("error code %d (%s: %s), want 6 or 7", e.Code, e.Msg, e.Details)
			}
			if !strings.Contains(e.Msg+" "+e.Details, "ipam.pools") && e.Code == cnierr.CodeInvalidConfig {
				t.Fatalf("error does not name the field: %s: %s", e.Msg, e.Details)
			}
			return
		}
		if len(pools) == 0 {
			t.Fatalf("accepted an empty list")
		}
		var names []string
		for _, p := range pools {
			if ValidName("name", p.Name) != nil || slices.Contains(names, p.Name) {
				t.Fatalf("accepted pool name %q (names so far %q)", p.Name, names)
			}
			names = append(names, p.Name)
			if _, err := p.Requested("p"); err != nil {
				t.Fatalf("accepted a bad requested-ip: %v", err)
			}
			if _, err := p.Exclusions("p"); err != nil {
				t.Fatalf("accepted a bad exclude: %v", err)
			}
			if _, _, err := p.InlineRanges("p"); err != nil {
				t.Fatalf("accepted bad ranges: %v", err)
			}
		}
		out, err := json.Marshal(pools)
		if err != nil {
			t.Fatalf("accepted pools do not marshal: %v", err)
		}
		again, err := ParseList(out, "ipam.pools")
		if err != nil {
			t.Fatalf("re-encoded pools %s rejected: %v", out, err)
		}
		if !reflect.DeepEqual(normalise(pools), normalise(again)) {
			t.Fatalf("pools changed:\n%+v\n%+v", pools, again)
		}
	})
}

// normalise maps an empty inline ranges or exclude array to nil: omitempty drops it,
// and either way the pool has no inline range set.
func normalise(ps []Pool) []Pool {
	out := slices.Clone(ps)
	for i := range out {
		if len(out[i].Ranges) == 0 {
			out[i].Ranges = nil
		}
		if len(out[i].Exclude) == 0 {
			out[i].Exclude = nil
		}
	}
	return out
}
