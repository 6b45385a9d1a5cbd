package alloc

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Scope is where an address lives: a pool (pool mode) or, standalone, the
// network itself. Exactly one field is set. Each allocator maps it to its
// own place (a state directory, a key prefix).
type Scope struct{ Pool, Network string }

// Path names s as "pool/<name>" (Pool when set) or "net/<name>": networks
// sort before pools, each by name. It is a scope's segment in etcd's keys,
// and the order the operators' listings keep.
func (s Scope) Path() string {
	if s.Pool != "" {
		return "pool/" + s.Pool
	}
	return "net/" + s.Network
}

// Target is one address an ADD must hand out.
type Target struct {
	Label     string // names the pool or range set in errors
	Scope     Scope
	RangeID   int // the range set's index (standalone) or 0 (a pool)
	Set       addrspace.RangeSet
	Requested netip.Addr
	Exclude   addrspace.Exclusions // never handed out (pool mode only)
	// Overflow are the pools allocated from, in order, when this one has
	// no free address (AllocateOverflow); each has no overflow of its own.
	Overflow []Target
	// source reads an overflow pool's ranges, which AddTargets leaves
	// for the ADD that spills into it (Resolved); nil: read.
	source func() (Target, error)
}

// ChainFamily is 7 when next, the ranges of the pool named other in chain
// (its pools' names, in order, found at field), is not of first's address
// family: each family's chain stays in its family.
func ChainFamily(field string, chain []string, other string, first, next addrspace.RangeSet) error {
	if next.Is4() == first.Is4() {
		return nil
	}
	return cnierr.New(cnierr.CodeInvalidConfig, "overflow pool of another address family",
		"%s.overflow: %s: pool %s is not of pool %s's family (each family's chain stays in its family)", field, strings.Join(chain, " → "), other, chain[0])
}

// Resolved is t with its ranges read: an overflow pool's are read when an
// ADD first needs them, so that an ADD whose first pool has room pays for
// its chain's names, not for parsing every pool's ranges.
func (t Target) Resolved() (Target, error) {
	if t.source == nil {
		return t, nil
	}
	return t.source()
}

// Allocator is the allocator over s with everything t asks of it.
func (t Target) Allocator(s Store) *Allocator { return New(s).Excluding(t.Exclude) }

// Scopes lists the scopes the configuration touches, as DEL and GC need
// them: no ranges required.
func (c *Config) Scopes() []Scope {
	if c.Pools == nil {
		return []Scope{{Network: c.Network}}
	}
	var out []Scope
	for _, p := range c.Pools {
		for _, name := range p.Names() {
			if s := (Scope{Pool: name}); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// AddTargets are Targets with the requested addresses assigned to them,
// as an ADD needs them (101 for one that fits no target). Overflow pools'
// ranges are read when the ADD spills into them (Target.Resolved): a
// chain that leaves its address family is 7 then.
func (c *Config) AddTargets() ([]Target, error) {
	out, err := c.targets(true)
	if err != nil {
		return nil, err
	}
	return out, assignRequests(out, c.Requested)
}

// Targets lists, in order, where the config places addresses: one target
// per pool in pool mode (with the Pool object's own request), one per
// range set standalone.
func (c *Config) Targets() ([]Target, error) { return c.targets(false) }

func (c *Config) targets(lazyChains bool) ([]Target, error) {
	var out []Target
	if c.Pools == nil {
		for i, rs := range c.RangeSets {
			out = append(out, Target{Label: fmt.Sprintf("range set %d (%s)", i, rs), Scope: Scope{Network: c.Network}, RangeID: i, Set: rs})
		}
		return out, nil
	}
	for i, p := range c.Pools {
		field := fmt.Sprintf("prevResult.pools[%d]", i)
		t, err := c.poolTarget(field, p)
		if err != nil {
			return nil, err
		}
		if t.Requested, err = p.Requested(field); err != nil {
			return nil, err
		}
		for j, q := range p.OverflowPools {
			read := func() (Target, error) {
				o, err := c.poolTarget(fmt.Sprintf("%s.overflowPools[%d]", field, j), q)
				if err == nil {
					err = ChainFamily(field, p.Names(), q.Name, t.Set, o.Set)
				}
				return o, err
			}
			o := Target{Label: "pool " + q.Name, Scope: Scope{Pool: q.Name}, source: read}
			if !lazyChains {
				if o, err = read(); err != nil {
					return nil, err
				}
			}
			t.Overflow = append(t.Overflow, o)
		}
		out = append(out, t)
	}
	return out, nil
}

// poolTarget is pool p's target (at field), without its request.
func (c *Config) poolTarget(field string, p pool.Pool) (Target, error) {
	src, ok, err := PoolSource(p, field, c.PoolDefs)
	if err != nil {
		return Target{}, err
	}
	if !ok {
		return Target{}, cnierr.New(cnierr.CodeInvalidConfig, "unknown pool: no inline ranges and no ipam.poolDefinitions entry", "%s.name=%s", field, p.Name)
	}
	return Target{Label: "pool " + p.Name, Scope: Scope{Pool: p.Name}, Set: src.Set, Exclude: src.Exclude}, nil
}

// ResolveChains reads the ranges of every overflow pool of targets, as a
// config check must (AddTargets leaves them to the ADD that spills).
func ResolveChains(targets []Target) error {
	for _, t := range targets {
		for _, c := range t.Chain() {
			if _, err := c.Resolved(); err != nil {
				return err
			}
		}
	}
	return nil
}

// chainFull is STATUS's rule for target t: exhausted only when every pool
// of its overflow chain is (full reports one pool's exhaustion mark).
func chainFull(t Target, full func(Target) (bool, error)) (bool, error) {
	for _, c := range t.Chain() {
		if ok, err := full(c); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// TargetFor is the target whose range set holds a: a target, or a pool
// of its overflow chain, whose ranges it reads if an ADD has not
// (Resolved); their error is the config's (7).
func TargetFor(targets []Target, a netip.Addr) (Target, bool, error) {
	for _, t := range targets {
		for _, c := range t.Chain() {
			c, err := c.Resolved()
			if err != nil {
				return Target{}, false, err
			}
			if c.Set.Contains(a) {
				return c, true, nil
			}
		}
	}
	return Target{}, false, nil
}

// PoolSource is a pool's ranges (inline, else its ipam.poolDefinitions
// entry) and exclusions; false when it has neither. The allocator's
// exclusions hold whichever side supplies the ranges: never handing an
// address out is the safe reading of either list.
func PoolSource(p pool.Pool, field string, defs *pool.Definitions) (pool.Definition, bool, error) {
	rs, inline, err := p.InlineRanges(field)
	if err != nil {
		return pool.Definition{}, false, err
	}
	def, defined, err := defs.Get(p.Name)
	if err != nil {
		return pool.Definition{}, false, err
	}
	if !inline {
		if !defined {
			return pool.Definition{}, false, nil
		}
		rs = def.Set
	}
	ex, err := p.Exclusions(field)
	if err != nil {
		return pool.Definition{}, false, err
	}
	return pool.Definition{Set: rs, Exclude: ex.Union(def.Exclude)}, true, nil
}
