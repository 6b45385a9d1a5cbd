package dapools

import (
	"encoding/json"

	"github.com/cniplugins/cniplugins/internal/hostlocal"
)

// PoolDef is one validated poolDefinitions entry, for the other users of
// the pool state directories (the full flavour's Docker IPAM driver), so
// that a pool means the same ranges and exclusions to all of them.
type PoolDef struct {
	Set     hostlocal.RangeSet
	Exclude hostlocal.Exclusions
}

// ParsePoolDefinitions validates a poolDefinitions object exactly as
// ipam-da-pools validates ipam.poolDefinitions; field names the object in
// errors.
func ParsePoolDefinitions(field string, defs map[string]json.RawMessage) (map[string]PoolDef, error) {
	parsed, err := poolDefinitionsAt(field, defs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]PoolDef, len(parsed))
	for name, d := range parsed {
		out[name] = PoolDef{Set: d.set, Exclude: d.exclude}
	}
	return out, nil
}
