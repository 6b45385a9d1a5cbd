package dapools

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// poolDef is one ipam.poolDefinitions entry, validated.
type poolDef struct {
	set     hostlocal.RangeSet
	exclude hostlocal.Exclusions
}

// poolDefinitions validates ipam.poolDefinitions. An entry is either a
// bare range set (the original form) or an object with "ranges" and an
// optional "exclude", the same key a Pool object uses.
func poolDefinitions(defs map[string]json.RawMessage) (map[string]poolDef, error) {
	return poolDefinitionsAt("ipam.poolDefinitions", defs)
}

// poolDefinitionsAt is poolDefinitions for an object found at field.
func poolDefinitionsAt(field string, defs map[string]json.RawMessage) (map[string]poolDef, error) {
	names := slices.Sorted(maps.Keys(defs)) // deterministic errors
	out := make(map[string]poolDef, len(defs))
	for _, name := range names {
		if err := pool.ValidName(field, name); err != nil {
			return nil, err
		}
		def, err := parsePoolDef(field+"."+name, defs[name])
		if err != nil {
			return nil, err
		}
		out[name] = def
	}
	return out, nil
}

func parsePoolDef(field string, raw json.RawMessage) (poolDef, error) {
	var entry struct {
		Ranges  []hostlocal.RangeConfig `json:"ranges"`
		Exclude []string                `json:"exclude"`
	}
	rangesField := field
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if err := netconf.Decode(raw, field, &entry); err != nil {
			return poolDef{}, err
		}
		if entry.Ranges == nil {
			return poolDef{}, cnierr.MissingConfig(field + ".ranges")
		}
		rangesField = field + ".ranges"
	} else if err := netconf.Decode(raw, field, &entry.Ranges); err != nil {
		return poolDef{}, err
	}
	var def poolDef
	var err error
	if def.set, err = hostlocal.ParseRangeSet(rangesField, entry.Ranges); err != nil {
		return poolDef{}, err
	}
	def.exclude, err = hostlocal.ParseExclusions(field+".exclude", entry.Exclude)
	return def, err
}
