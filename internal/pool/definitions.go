package pool

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// Definition is what a pool hands addresses out from: its range set, less
// the addresses it must never hand out. It is one poolDefinitions entry,
// validated, and the resolved source of a pool an allocator serves.
type Definition struct {
	Set     addrspace.RangeSet
	Exclude addrspace.Exclusions
	// Overflow is the entry's "overflow": the pool allocated from when
	// this one is full ("" none).
	Overflow string
}

// ParseDefinitions validates a poolDefinitions object (the allocator's
// ipam.poolDefinitions, the Docker driver's poolDefinitions): the one
// parser, so that a pool means the same ranges and exclusions to every
// program that reads it. field names the object in errors.
func ParseDefinitions(field string, defs map[string]json.RawMessage) (map[string]Definition, error) {
	names := slices.Sorted(maps.Keys(defs)) // deterministic errors
	out := make(map[string]Definition, len(defs))
	for _, name := range names {
		if err := ValidName(field, name); err != nil {
			return nil, err
		}
		def, err := ParseDefinition(field+"."+name, defs[name])
		if err != nil {
			return nil, err
		}
		out[name] = def
	}
	return out, nil
}

// ParseDefinition validates one poolDefinitions entry, found at field: a
// bare range set (the original form) or an object with "ranges" and an
// optional "exclude", the same key a Pool object uses.
func ParseDefinition(field string, raw json.RawMessage) (Definition, error) {
	var entry struct {
		Ranges   []addrspace.RangeConfig `json:"ranges"`
		Exclude  []string                `json:"exclude"`
		Overflow string                  `json:"overflow"`
	}
	rangesField := field
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if err := netconf.Decode(raw, field, &entry); err != nil {
			return Definition{}, err
		}
		if entry.Ranges == nil {
			return Definition{}, cnierr.MissingConfig(field + ".ranges")
		}
		rangesField = field + ".ranges"
	} else if err := netconf.Decode(raw, field, &entry.Ranges); err != nil {
		return Definition{}, err
	}
	var def Definition
	var err error
	if def.Set, err = addrspace.ParseRangeSet(rangesField, entry.Ranges); err != nil {
		return Definition{}, err
	}
	if def.Exclude, err = addrspace.ParseExclusions(field+".exclude", entry.Exclude); err != nil {
		return Definition{}, err
	}
	if entry.Overflow != "" {
		if err := ValidName(field+".overflow", entry.Overflow); err != nil {
			return Definition{}, err
		}
	}
	def.Overflow = entry.Overflow
	return def, nil
}
