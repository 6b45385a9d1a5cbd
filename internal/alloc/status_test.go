package alloc_test

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// STATUS fails (50) only when every set of pools an ADD could be given
// holds a full pool; without choices the one set is every pool (or, for
// host-local's standalone mode, every range set).
func TestStatusVerdict(t *testing.T) {
	const defs = `"ipam":{"poolDefinitions":{"a":[{"subnet":"10.5.0.0/24"}],"b":[{"subnet":"10.6.0.0/24"}],"c":[{"subnet":"10.7.0.0/24"}]}}`
	for _, tt := range []struct {
		name, prev string
		full       []bool // per pool a, b, c (or per range set)
		want50     string // "" for success, else a substring of the details
	}{
		{"no choices, none full", `"pools":[{"name":"a"},{"name":"b"}]`, []bool{false, false}, ""},
		{"no choices, one full", `"pools":[{"name":"a"},{"name":"b"}]`, []bool{false, true}, "pool b"},
		{"tenant a full, b free", `"pools":[{"name":"a"},{"name":"b"}],"choices":[["a"],["b"]]`, []bool{true, false}, ""},
		{"every choice full", `"pools":[{"name":"a"},{"name":"b"}],"choices":[["a"],["b"]]`, []bool{true, true}, "pool a, pool b"},
		{"a dual set blocked by one pool, the other set free", `"pools":[{"name":"a"},{"name":"b"},{"name":"c"}],"choices":[["a","b"],["c"]]`, []bool{false, true, false}, ""},
		{"both sets blocked", `"pools":[{"name":"a"},{"name":"b"},{"name":"c"}],"choices":[["a","b"],["c"]]`, []bool{false, true, true}, "pool b, pool c"},
		{"a pool in no choice does not count", `"pools":[{"name":"a"},{"name":"b"}],"choices":[["a"]]`, []bool{false, true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n",`+defs+`,"prevResult":{"cniVersion":"1.1.0",`+tt.prev+`}}`), nil, true)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := c.Targets()
			if err != nil {
				t.Fatal(err)
			}
			err = statusOf(c, alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","prevResult":{"cniVersion":"1.1.0",`+tt.prev+`}}`), ts, marks(ts, tt.full))
			e := cnierr.As(err)
			switch {
			case tt.want50 == "" && err != nil:
				t.Errorf("STATUS = %v, want success", err)
			case tt.want50 != "" && (e == nil || e.Code != cnierr.CodeNotAvailable || !strings.Contains(e.Details, tt.want50)):
				t.Errorf("STATUS = %+v, want 50 naming %q", err, tt.want50)
			}
		})
	}

	// Standalone: host-local's meaning, any full range set is 50.
	c, err := ipamconf.Parse(alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n","ipam":{"ranges":[[{"subnet":"10.8.0.0/24"}],[{"subnet":"10.9.0.0/24"}]]}}`), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := c.Targets()
	if e := cnierr.As(statusOf(c, alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n"}`), ts, marks(ts, []bool{false, true}))); e == nil || e.Code != cnierr.CodeNotAvailable || !strings.Contains(e.Details, "range set 1 (10.9.0.1") {
		t.Errorf("standalone with a full range set: %+v, want 50 naming it", e)
	}
	if err := statusOf(c, alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n"}`), ts, marks(ts, []bool{false, false})); err != nil {
		t.Errorf("standalone with room: %v", err)
	}

	// Hostile choices are refused before any store is read.
	for _, bad := range []string{`"choices":[["zz"]]`, `"choices":[[]]`, `"choices":[]`, `"choices":"a"`} {
		prev := `"pools":[{"name":"a"}],` + bad
		env := alloctest.Envelope(t, `{"cniVersion":"1.1.0","name":"n",`+defs+`,"prevResult":{"cniVersion":"1.1.0",`+prev+`}}`)
		c, err := ipamconf.Parse(env, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := c.Targets()
		if e := cnierr.As(statusOf(c, env, ts, marks(ts, []bool{false}))); e == nil || e.Code != cnierr.CodeInvalidConfig || !strings.Contains(e.Msg+e.Details, "choices") {
			t.Errorf("%s: %+v, want 7 naming prevResult.choices", bad, e)
		}
	}
}

// statusOf is an allocator's STATUS: the choices prevResult in env names,
// judged by the engine.
func statusOf(c *alloc.Config, env *netconf.Envelope, ts []alloc.Target, marked func(alloc.Target) (bool, error)) error {
	choices, err := ipamconf.Choices(env, c)
	if err != nil {
		return err
	}
	return c.Status(ts, choices, marked)
}

// marks is a store whose exhaustion marks are full, by target.
func marks(ts []alloc.Target, full []bool) func(alloc.Target) (bool, error) {
	return func(p alloc.Target) (bool, error) {
		for i, t := range ts {
			if t.Scope == p.Scope && t.RangeID == p.RangeID {
				return full[i], nil
			}
		}
		return false, nil
	}
}
