package pool

import (
	"fmt"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// MaxTenantLen bounds a quota's tenant ("<per>=<value>", or
// "<namespace>/<per>=<value>"): stores name it in a file or key
// (hex-encoded, so that no tenant names a path); 120 bytes keep the
// disk store's "_tenant-<hex>" and "<hex>.<n>" within a file name's 255.
const MaxTenantLen = 120

// MaxQuotaPools bounds a quota's count scope: a count costs a look at
// each of its pools, and a scope is at most the config's pools.
const MaxQuotaPools = 1024

// Quota is a selection's "quota": the attachment's tenant, the rule that
// set the quota (for messages), and how many addresses (reservations and
// sticky holds) the tenant may hold across the pools it is counted in.
// Pools is that count scope (with their overflow chains as the selector
// resolved them): every pool that any rule the attachment's author could
// reach would give the same tenant, so that nothing the author chooses
// moves an address out of the count. Empty (a selector that names none):
// the selection's pools and their chains.
type Quota struct {
	Tenant string   `json:"tenant"`
	Rule   string   `json:"rule"`
	Max    int      `json:"max"`
	Pools  []string `json:"pools,omitempty"`
}

// MarshalJSON writes the quota object by hand: a selector prints one on
// every ADD, and in a chain run in one process nothing decodes it
// (netconf.Envelope.PrevBuilt), so encoding/json's view of the struct
// would be built for this one object.
func (q Quota) MarshalJSON() ([]byte, error) {
	return appendFields([]byte{'{'}, false, jsonField{"tenant", q.Tenant, true}, jsonField{"rule", q.Rule, true},
		jsonField{"max", q.Max, true}, jsonField{"pools", q.Pools, len(q.Pools) > 0})
}

// Validate checks a quota found at field.
func (q Quota) Validate(field string) error {
	switch {
	case q.Tenant == "" || len(q.Tenant) > MaxTenantLen || strings.ContainsFunc(q.Tenant, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return cnierr.InvalidConfig(field+".tenant", q.Tenant, fmt.Sprintf("a tenant is printable, 1 to %d bytes", MaxTenantLen))
	case q.Max < 0:
		return cnierr.InvalidConfig(field+".max", q.Max, "must be 0 or more")
	case len(q.Rule) > 256:
		return cnierr.InvalidConfig(field+".rule", q.Rule[:16]+"...", "longer than 256 bytes")
	case len(q.Pools) > MaxQuotaPools:
		return cnierr.InvalidConfig(field+".pools", len(q.Pools), fmt.Sprintf("more than %d pools", MaxQuotaPools))
	}
	for i, name := range q.Pools {
		if err := ValidName(fmt.Sprintf("%s.pools[%d]", field, i), name); err != nil {
			return err
		}
	}
	return nil
}

// QuotaFromPrevResult is prevResult.quota, nil when there is none.
func QuotaFromPrevResult(conf *netconf.Envelope) (*Quota, error) {
	if sel, built := conf.PrevBuilt.(*Selection); built {
		if sel.Quota == nil {
			return nil, nil
		}
		q := *sel.Quota
		return &q, q.Validate("prevResult.quota")
	}
	prev, err := prevSelection(conf)
	if err != nil || absent(prev.Quota) {
		return nil, err
	}
	var q Quota
	if err := netconf.Decode(prev.Quota, "prevResult.quota", &q); err != nil {
		return nil, err
	}
	return &q, q.Validate("prevResult.quota")
}

// TenantName is tenant as a file or key name: its bytes in hex.
func TenantName(tenant string) string { return fmt.Sprintf("%x", tenant) }
