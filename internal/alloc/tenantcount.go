package alloc

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Tenant counts: which of a store's records count for a quota's tenant,
// and in which pools. Both stores keep one record per address reserved
// for a tenant (the disk store a hard link beside the pool's
// reservations, etcd a key written in the claim's transaction) and count
// the records these rules keep; the stores decide only how a record is
// stored and read.

// CountScopes is where quota q's tenant is counted for an ADD of targets:
// every pool of each target's chain, overflow pools included, then the
// quota's own pools (pool.Quota.Pools: those of every rule that gives the
// tenant the same quota), each once, in that order. A tenant's records
// elsewhere (another network's pools, under another quota) are not this
// quota's. Nil without a quota.
func CountScopes(q *pool.Quota, targets []Target) []Scope {
	if q == nil {
		return nil
	}
	var out []Scope
	add := func(s Scope) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, t := range targets {
		for _, c := range t.Chain() {
			add(c.Scope)
		}
	}
	for _, name := range q.Pools {
		add(Scope{Pool: name})
	}
	return out
}

// TenantQuota is the one quota of a tenant whom several rules bound
// together: quotas, in the rules' order, are those of every rule the
// attachment's author could make it match that give it the same tenant,
// and own is the rule it matches. Nothing the author chooses moves an
// address out of the count or raises the limit: the count spans every
// pool any of them could give, and the limit is the smallest max, own's
// where it is as small as any (106 names it).
func TenantQuota(own pool.Quota, quotas []pool.Quota) *pool.Quota {
	q := own
	q.Pools = nil
	for _, o := range quotas {
		if o.Max < q.Max {
			q.Rule, q.Max = o.Rule, o.Max
		}
		for _, name := range o.Pools {
			if !slices.Contains(q.Pools, name) {
				q.Pools = append(q.Pools, name)
			}
		}
	}
	return &q
}

// TenantRecord is what a store knows of one of its records of a tenant's
// address.
type TenantRecord struct {
	Tenant string     // "" when the record names no tenant
	Addr   netip.Addr // invalid when the record names no address
	Scope  Scope      // where Addr is
	// Reserved: the address is reserved by the reservation the record
	// was written with. A sticky hold keeps its reservation (the disk
	// store's file, etcd's claim key), so a held address counts.
	Reserved bool
	// Foreign says why an entry among the records is no record of the
	// store's layout ("" when it is one): such an entry inflates the
	// count and goes.
	Foreign string
}

// Stale is why r counts nothing, "" when it counts for its tenant. A
// record that counts nothing is removed (a tenant's next ADD, GC, fsck
// --repair): a process killed between writing it and reserving, or
// between releasing and removing it, leaves one, and so does every
// release in etcd, which writes nothing of the tenant's.
func (r TenantRecord) Stale() string {
	switch {
	case r.Foreign != "":
		return r.Foreign
	case !r.Addr.IsValid():
		return "names no address"
	case r.Tenant == "":
		return "is no tenant's record"
	case !r.Reserved:
		return "its address is not reserved"
	}
	return ""
}

// CountTenant is a tenant's count over its records: those that count
// (Stale) in scopes (CountScopes). stale lists, by index, the records that
// count nothing, for the store to remove.
func CountTenant(recs []TenantRecord, scopes []Scope) (n int, stale []int) {
	for i, r := range recs {
		switch {
		case r.Stale() != "":
			stale = append(stale, i)
		case slices.Contains(scopes, r.Scope):
			n++
		}
	}
	return n, stale
}

// QuotaReached is the quota's verdict on a count: 106 once the tenant's
// n addresses have reached q's max, nil below it. QuotaGate asks it
// before a new address, and a store that counts again inside its own
// transaction (etcd, when another claim for the tenant committed since
// the count) asks it of that count.
func QuotaReached(q *pool.Quota, n int) error {
	if n < q.Max {
		return nil
	}
	return cnierr.New(cnierr.CodeQuotaExceeded, "tenant quota exceeded",
		"tenant=%s rule=%s max=%d inUse=%d", q.Tenant, q.Rule, q.Max, n)
}

// ErrWholeCount ends an ADD whose quota count, taken partly without the
// counted pools' locks, reached the quota: the caller runs the ADD again
// with every pool the quota counts in locked.
var ErrWholeCount = errors.New("the ADD needs every pool its quota counts in")

// PartialCount is QuotaGate's count of n addresses, exact when every
// pool was counted under its lock. A count taken without a pool's lock
// may be too high (a record a killed ADD or DEL left there goes only
// under that lock), never too low while the tenant's lock is held, so
// it may let an ADD through but never refuse one: at the quota it is
// ErrWholeCount instead of 106.
func PartialCount(q *pool.Quota, n int, exact bool) (int, error) {
	if !exact && QuotaReached(q, n) != nil {
		return n, ErrWholeCount
	}
	return n, nil
}
