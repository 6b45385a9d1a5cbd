package etcdstore

import (
	"errors"
	"strings"

	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// sweepTenants deletes the tenant records (quota.go) that count nothing,
// so that a tenant that stops claiming does not keep its dead records for
// ever, read by every count and by `leases`; its errors do not stop it.
// It sweeps every tenant's records, not only the GC's network's: a record
// says nothing of the network that claimed it, and is judged against its
// own claim key alone, the same whichever network GCs. Each delete is
// guarded by the record's mod revision as read, so a claim that writes the
// record again meanwhile, from any host, is never undone.
func (op *Operation) sweepTenants() error {
	// A tenant's version key goes too once no record of it counts, so
	// that tenants that come and go (namespaces) leave nothing behind. It
	// is read before the records: a claim for the tenant that commits
	// after that read rewrites it, so the guarded delete keeps it, and one
	// that committed before wrote a record the listing sees counting.
	versions, verr := op.cl.List(op.keys.versionsRoot(), true)
	tenants, dead, err := op.tenantRecords()
	counting := map[string]bool{} // pool.TenantName of each tenant with a record that counts
	for _, t := range tenants {
		counting[pool.TenantName(t)] = true
	}
	if len(dead) > 0 {
		op.log.Info("gc removes tenant records that count nothing", logging.Int("records", len(dead)))
	}
	if verr == nil && err == nil { // a batch not judged may hold a record that counts
		for _, v := range versions {
			if !counting[strings.TrimPrefix(string(v.Key), op.keys.versionsRoot())] {
				dead = append(dead, removeRecord(v))
			}
		}
	}
	// No guard: each removal is its own nested transaction with its own
	// condition, so apply's batches always succeed.
	_, aerr := op.apply(nil, dead)
	return errors.Join(verr, err, aerr)
}
