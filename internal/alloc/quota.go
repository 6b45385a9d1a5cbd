package alloc

import "github.com/cniplugins/cniplugins/internal/pool"

// Quotas: a selection's quota (pool.Quota) bounds how many addresses its
// tenant holds (reservations and sticky holds) across the selection's
// pools, overflow pools included. The check and the reservation are one
// step: under the tenant's lock, which every ADD with a quota takes (the
// disk store, internal/dapools), or in the claim's transaction (etcd).
// Lowering a quota frees nothing: it refuses new addresses until the
// tenant is below it.

// TenantStore is a store that records whose each reservation is and
// counts a tenant's addresses without scanning the pool.
type TenantStore interface {
	// ForTenant makes the store record the reservations that follow as
	// tenant's ("" none).
	ForTenant(tenant string)
	// TenantAddrs counts the addresses recorded as tenant's.
	TenantAddrs(tenant string) (int, error)
}

// QuotaGate is the quota's check before target t's address: 106 once
// inUse (the tenant's addresses across the selection's pools) has reached
// max. It checks nothing, and calls no inUse, without a quota, or when the
// sticky key already holds an address in t's chain: that address is the
// tenant's already and is given back whatever the quota. mig is the ADD's
// migration name ("" none).
//
// At the quota, the answers an ADD gets below it come first, so that the
// quota changes nothing but whether a new address is taken: a retried ADD
// of an attachment that holds an address in t's chain goes on to its 102
// (a 106 there would have the chain's rollback free the live address),
// and a migration target whose key holds nothing is 107, never 106 (a
// target never allocates).
func QuotaGate(q *pool.Quota, t Target, key, mig string, locate func(Target) (Presence, error), inUse func() (int, error)) error {
	if q == nil {
		return nil
	}
	if key != "" {
		for _, c := range t.Chain() {
			at, err := locate(c)
			if err != nil {
				return err
			}
			if at.KeyHeld {
				return nil
			}
		}
	}
	n, err := inUse()
	if err != nil {
		return err
	}
	verdict := QuotaReached(q, n)
	if verdict == nil {
		return nil
	}
	// Looked for only at the quota, so an ADD below it pays nothing more.
	for _, c := range t.Chain() {
		at, err := locate(c)
		if err != nil {
			return err
		}
		if at.Attached.IsValid() {
			return nil
		}
	}
	if key != "" && mig != "" {
		return NoMigrationSource(key, mig, t)
	}
	return verdict
}
