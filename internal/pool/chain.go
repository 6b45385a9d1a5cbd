package pool

import (
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Catalog is where the pools of overflow chains are found: a list of Pool
// objects first (a selector's own pools, a selection's overflowPools),
// then poolDefinitions, whose entries may carry an overflow of their own.
// Selectors and allocators resolve chains through it, so a chain means
// the same pools to both.
type Catalog struct {
	Pools []Pool
	// Overflows are poolDefinitions' names, each with its entry's
	// overflow ("" none): all a chain needs of a definition (Overflows,
	// ParseOverflows).
	Overflows map[string]string
}

// Overflows is what a Catalog needs of parsed definitions.
func Overflows(defs map[string]Definition) map[string]string {
	out := make(map[string]string, len(defs))
	for name, d := range defs {
		out[name] = d.Overflow
	}
	return out
}

// find is the pool named name: a listed object, else a bare name that
// poolDefinitions defines.
func (c Catalog) find(name string) (Pool, bool) {
	for _, p := range c.Pools {
		if p.Name == name {
			return p, true
		}
	}
	if _, ok := c.Overflows[name]; ok {
		return Pool{Name: name}, true
	}
	return Pool{}, false
}

// overflowOf is q's overflow: its object's own, else its definition's.
func (c Catalog) overflowOf(q Pool) string {
	if q.Overflow != "" {
		return q.Overflow
	}
	return c.Overflows[q.Name]
}

// Resolve is p with its overflow chain resolved: Overflow set and
// OverflowPools the pools after p, in order (each without a chain of its
// own). An unknown name, a cycle, or a chain longer than
// MaxPerAttachment is code 7 naming the pools; field is where p sits.
func (c Catalog) Resolve(field string, p Pool) (Pool, error) {
	p.Overflow = c.overflowOf(p)
	names := []string{p.Name}
	var chain []Pool
	for next := p.Overflow; next != ""; {
		walked := func() string { return strings.Join(append(names, next), " → ") }
		if slices.Contains(names, next) {
			return Pool{}, cnierr.New(cnierr.CodeInvalidConfig, "overflow chain is a cycle", "%s.overflow: %s", field, walked())
		}
		q, ok := c.find(next)
		if !ok {
			return Pool{}, cnierr.New(cnierr.CodeInvalidConfig, "unknown overflow pool",
				"%s.overflow: %s: no pool %q is defined (a rule's or default pool, or ipam.poolDefinitions)", field, walked(), next)
		}
		if len(chain) == MaxPerAttachment {
			return Pool{}, cnierr.InvalidConfig(field+".overflow", walked(), "an overflow chain holds at most 64 pools")
		}
		q.Overflow, q.OverflowPools = c.overflowOf(q), nil
		chain = append(chain, q)
		names = append(names, next)
		next = q.Overflow
	}
	p.OverflowPools = chain
	return p, nil
}

// Names are p's pool and its chain's, in order.
func (p Pool) Names() []string {
	out := []string{p.Name}
	for _, q := range p.OverflowPools {
		out = append(out, q.Name)
	}
	return out
}
