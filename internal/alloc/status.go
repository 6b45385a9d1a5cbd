package alloc

import (
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Status is every allocator's STATUS, marked reporting whether the store
// holds an exhaustion mark for one pool or range set (an ADD found it
// full and nothing was released there since): 50 only when no ADD the
// network could be asked for can be served. A target is full only when
// every pool of its overflow chain is. An ADD is given one set of pools
// (choices, prevResult's, lists the sets a selector can choose among;
// without them, the one set of every target) and needs an address from each, so a
// set is servable when none of its pools is full. One tenant's full pool
// beside another set with room is that tenant's ADD error (100), never
// the network's: a runtime turns a STATUS error into a node that takes
// no pod at all (containerd 2.x reports NetworkReady=false).
func (c *Config) Status(targets []Target, choices [][]string, marked func(Target) (bool, error)) error {
	full := make([]bool, len(targets))
	for i, t := range targets {
		var err error
		if full[i], err = chainFull(t, marked); err != nil {
			return err
		}
	}
	exhausted := func(scope Scope) (string, bool) {
		for i, t := range targets {
			if t.Scope == scope && full[i] {
				return t.Label, true
			}
		}
		return "", false
	}
	var blocked []string // the exhausted pools that block some set, once each
	block := func(label string) {
		if !slices.Contains(blocked, label) {
			blocked = append(blocked, label)
		}
	}
	if choices == nil {
		for i, t := range targets {
			if full[i] {
				block(t.Label)
			}
		}
		if len(blocked) == 0 {
			return nil
		}
		return cnierr.New(cnierr.CodeNotAvailable, "address pool exhausted", "%s of network %s", strings.Join(blocked, ", "), c.Network)
	}
	for _, set := range choices {
		servable := true
		for _, name := range set {
			if label, ok := exhausted(Scope{Pool: name}); ok {
				block(label)
				servable = false
			}
		}
		if servable {
			return nil
		}
	}
	return cnierr.New(cnierr.CodeNotAvailable, "address pool exhausted",
		"every set of pools network %s can select has a full pool: %s", c.Network, strings.Join(blocked, ", "))
}
