// Package registry is the explicit table of personalities: the one place
// that knows every name a build of the binary answers to.
package registry

import (
	"slices"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/delegated"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Table is the set of personalities of one flavour of the binary. Each
// flavour's main builds its own (the lean one with Lean, the full one with
// Lean().With(...)), so a personality is linked into a binary only when
// that binary's main names it: nothing registers itself, and the lean
// binary cannot pick up the full flavour's network code by accident.
type Table struct {
	extra []plugin.Personality
}

// Lean is the table of the lean binary: no network-facing personality.
func Lean() Table { return Table{} }

// With returns t plus ps, listed after t's own personalities.
func (t Table) With(ps ...plugin.Personality) Table {
	t.extra = append(slices.Clip(t.extra), ps...)
	return t
}

// Personalities returns the table in the order `cniplugins list` prints
// it. It is built per call rather than held in a variable, so there is no
// mutable global and no init-order coupling; ipam-delegated runs any of
// them in-process through Lookup.
func (t Table) Personalities() []plugin.Personality {
	return append([]plugin.Personality{
		delegated.Personality(delegated.InProcess(t.Lookup)),
		dsselect.Static(),
		dsselect.Args(),
		dsselect.Iface(),
		dapools.Personality(nil),
	}, t.extra...)
}

// Lookup finds a personality by name.
func (t Table) Lookup(name string) (plugin.Personality, bool) {
	for _, p := range t.Personalities() {
		if p.Name == name {
			return p, true
		}
	}
	return plugin.Personality{}, false
}

// Names lists the personality names.
func (t Table) Names() []string {
	ps := t.Personalities()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}
