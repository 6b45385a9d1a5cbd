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

// Definitions is a poolDefinitions object whose entries are parsed as a
// command asks for them: an ADD pays for the pools it may allocate from,
// not for every tenant's pool of a large cluster. Names and overflows are
// validated up front (chains resolve on every command).
type Definitions struct {
	field string
	raw   map[string]json.RawMessage
	// Overflows are the entries' names and overflows (Catalog.Overflows).
	Overflows map[string]string
	parsed    map[string]Definition
}

// NewDefinitions validates the names and overflows of poolDefinitions
// object raw, found at field.
func NewDefinitions(field string, raw map[string]json.RawMessage) (*Definitions, error) {
	overflows, err := ParseOverflows(field, raw)
	if err != nil {
		return nil, err
	}
	return &Definitions{field: field, raw: raw, Overflows: overflows, parsed: map[string]Definition{}}, nil
}

// Get is entry name, parsed and validated (once); false when there is
// none.
func (d *Definitions) Get(name string) (Definition, bool, error) {
	if d == nil {
		return Definition{}, false, nil
	}
	if def, ok := d.parsed[name]; ok {
		return def, true, nil
	}
	raw, ok := d.raw[name]
	if !ok {
		return Definition{}, false, nil
	}
	def, err := ParseDefinition(d.field+"."+name, raw)
	if err != nil {
		return Definition{}, false, err
	}
	d.parsed[name] = def
	return def, true, nil
}

// All is every entry, parsed: what `cniplugins validate` and the
// operators' views need.
func (d *Definitions) All() (map[string]Definition, error) {
	if d == nil {
		return nil, nil
	}
	return ParseDefinitions(d.field, d.raw)
}

// ParseOverflows reads what a chain needs of a poolDefinitions object:
// each entry's name and overflow (Catalog.Overflows), both validated as
// names. A selector resolves chains with it; the ranges are the
// allocator's to validate (ParseDefinitions), for the pools it serves.
func ParseOverflows(field string, defs map[string]json.RawMessage) (map[string]string, error) {
	out := make(map[string]string, len(defs))
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if err := ValidName(field, name); err != nil {
			return nil, err
		}
		var entry overflowJSON
		if t := bytes.TrimSpace(defs[name]); len(t) > 0 && t[0] == '{' {
			if err := netconf.Decode(t, field+"."+name, &entry); err != nil {
				return nil, err
			}
			if err := validOverflow(field+"."+name, entry.Overflow); err != nil {
				return nil, err
			}
		}
		out[name] = entry.Overflow
	}
	return out, nil
}

// overflowJSON is what a chain reads of a poolDefinitions entry in its
// object form: the ranges are only skipped over, so that encoding/json
// builds no view of their types unless a command allocates from them.
type overflowJSON struct {
	Overflow string `json:"overflow"`
}

// definitionJSON is a poolDefinitions entry in its object form.
type definitionJSON struct {
	Ranges   []addrspace.RangeConfig `json:"ranges"`
	Exclude  []string                `json:"exclude"`
	Overflow string                  `json:"overflow"`
}

// ParseDefinition validates one poolDefinitions entry, found at field: a
// bare range set (the original form) or an object with "ranges" and an
// optional "exclude", the same key a Pool object uses.
func ParseDefinition(field string, raw json.RawMessage) (Definition, error) {
	var entry definitionJSON
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
	def.Overflow = entry.Overflow
	return def, validOverflow(field, entry.Overflow)
}
