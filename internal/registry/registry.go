// Package registry is the explicit table of personalities: the one place
// that knows every name the binary answers to.
package registry

import (
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/delegated"
	"github.com/cniplugins/cniplugins/internal/dsselect"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Personalities returns the table in the order `cniplugins list` prints it.
// It is built per call rather than held in a package variable, so there is
// no mutable global and no init-order coupling.
func Personalities() []plugin.Personality {
	return []plugin.Personality{
		delegated.Personality(delegated.InProcess(Lookup)),
		dsselect.Static(),
		dapools.Personality(),
	}
}

// Lookup finds a personality by name.
func Lookup(name string) (plugin.Personality, bool) {
	for _, p := range Personalities() {
		if p.Name == name {
			return p, true
		}
	}
	return plugin.Personality{}, false
}

// Names lists the personality names.
func Names() []string {
	ps := Personalities()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}
