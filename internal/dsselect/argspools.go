package dsselect

import (
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// ArgsPool is a pool ipam-ds-args can select: a rule's or a default's
// Pool object (inline ranges, or a name ipam.poolDefinitions defines) or
// a podChoice name, with its overflow chain resolved as an ADD's
// selection carries it.
type ArgsPool struct {
	pool.Pool
	// Field is where the config defines it: the first place that gives
	// it ranges ("ipam.rules[0].pools[1]", "ipam.defaultPools[0]"), else
	// the first that names it.
	Field string
}

// ArgsPools lists every pool conf's rules, their podChoice and
// defaultPools can select, each name once, in the order of the catalogue
// DEL, GC and STATUS name: what `cniplugins pools` lists beside
// ipam.poolDefinitions, so that a pool written inline in a rule is
// counted where the allocators keep it (its name is its state's place,
// inline or defined).
func ArgsPools(conf *netconf.Envelope) ([]ArgsPool, error) {
	c, err := parseArgsConfig(conf)
	if err != nil {
		return nil, err
	}
	out := make([]ArgsPool, len(c.pools))
	for i, p := range c.pools {
		out[i] = ArgsPool{Pool: p, Field: c.fields[i]}
	}
	return out, nil
}
