package daetcd

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Quotas in etcd, cluster-wide (docs/etcd.md, "Keys in etcd"):
//
//	tenant/<tenant>/<scope>/<address>   the tenant's address: written (empty) by the
//	                                    claim's transaction, so its mod revision is
//	                                    the claim key's create revision
//	tenantv/<tenant>                    the tenant's version: every claim for the
//	                                    tenant writes it, and requires it unchanged
//	                                    since the count
//
// A record counts while the claim key of its address exists with that
// create revision (a hold keeps the claim key: holds count; judge is the
// rule); once the claim goes (DEL, GC, a failed ADD's undo, a hold's end)
// it counts nothing. Releases write nothing here, so DEL keeps its one
// round trip; the next claim for the tenant deletes up to maxStaleDeletes
// such records, and every GC deletes them all, every tenant's, and the
// version of a tenant none of whose records counts (tenantgc.go), each
// only while as read. Two claims for one tenant
// cannot both pass a count of max−1: each requires the version the count
// read, and the first to commit changes it.

func (l layout) tenantsRoot() string              { return l.prefix + "tenant/" }
func (l layout) tenantPrefix(name string) string  { return l.tenantsRoot() + name + "/" }
func (l layout) tenantVersion(name string) string { return l.versionsRoot() + name }
func (l layout) versionsRoot() string             { return l.prefix + "tenantv/" }
func (l layout) tenantMark(name string, s alloc.Scope, ip netip.Addr) string {
	return l.tenantPrefix(name) + scopePath(s) + "/" + ip.String()
}

// quotaState is an ADD's last count of its tenant.
type quotaState struct {
	q       *pool.Quota
	name    string      // pool.TenantName
	version int64       // the version key's mod revision at the count; 0: absent
	stale   []etcdkv.KV // records that count nothing, to delete
	// enforce: the target's claims require the version (QuotaGate);
	// without, they only record the address as the tenant's.
	enforce bool
	counted map[string]bool // alloc.CountScopes, as scopePath writes them
}

// newQuotaState is the state of quota q for an ADD of targets.
func newQuotaState(q *pool.Quota, targets []alloc.Target) *quotaState {
	if q == nil {
		return nil
	}
	qs := &quotaState{q: q, name: pool.TenantName(q.Tenant), counted: map[string]bool{}}
	for _, s := range alloc.CountScopes(q, targets) {
		qs.counted[scopePath(s)] = true
	}
	return qs
}

// counts: the record whose address is where ("<scope>/<address>") is in
// the count's scope.
func (qs *quotaState) counts(where string) bool {
	i := strings.LastIndexByte(where, '/')
	return i > 0 && qs.counted[where[:i]]
}

// count reads the tenant's records and version, then the claims they
// name: the addresses the tenant has, cluster-wide.
func (op *operation) count(qs *quotaState) (int, error) {
	resp, err := op.cl.Read(etcdkv.GetPrefix(op.keys.tenantPrefix(qs.name)), etcdkv.Get(op.keys.tenantVersion(qs.name)))
	if err != nil {
		return 0, err
	}
	qs.version = 0
	if v, ok := resp.First(1); ok {
		qs.version = v.ModRevision
	}
	n := 0
	qs.stale = nil
	for batch := range slices.Chunk(resp.KVs(0), readBatch) {
		live, err := op.judge(batch)
		if err != nil {
			return 0, err
		}
		for i, m := range batch {
			if live[i] {
				if _, where := op.keys.splitTenantRecord(string(m.Key)); qs.counts(where) {
					n++
				}
			} else if len(qs.stale) < maxStaleDeletes {
				qs.stale = append(qs.stale, m)
			}
		}
	}
	return n, nil
}

// judge reads the claims that the records of batch (at most readBatch,
// of any tenants) name, and reports for each whether it counts
// (alloc.TenantRecord.Stale), which count, leases and GC's sweep all
// follow. A record was written in its claim's transaction, so the claim
// it was written with is the claim key with the record's revision as its
// create revision: a hold keeps that key.
func (op *operation) judge(batch []etcdkv.KV) ([]bool, error) {
	reads := make([]etcdkv.Op, len(batch))
	for i, m := range batch {
		_, where := op.keys.ofTenantRecord(string(m.Key))
		reads[i] = etcdkv.Get(op.keys.prefix + "ip/" + where)
	}
	resp, err := op.cl.Read(reads...)
	if err != nil {
		return nil, err
	}
	live := make([]bool, len(batch))
	for i, m := range batch {
		c, ok := resp.First(i)
		tenant, where := op.keys.ofTenantRecord(string(m.Key))
		r := alloc.TenantRecord{Tenant: tenant, Reserved: ok && c.CreateRevision == m.ModRevision}
		r.Addr, _ = netip.ParseAddr(where[strings.LastIndexByte(where, '/')+1:])
		live[i] = r.Stale() == ""
	}
	return live, nil
}

// ofTenantRecord splits a record's key into its tenant (as the quota
// names it) and the address it records, "<scope>/<address>" as in the
// address's claim key.
func (l layout) ofTenantRecord(key string) (tenant, where string) {
	name, where := l.splitTenantRecord(key)
	raw, _ := hex.DecodeString(name)
	return string(raw), where
}

// splitTenantRecord is ofTenantRecord with the tenant as its keys name it
// (pool.TenantName).
func (l layout) splitTenantRecord(key string) (name, where string) {
	name, where, _ = strings.Cut(strings.TrimPrefix(key, l.tenantsRoot()), "/")
	return name, where
}

// removeRecord deletes a record that counts nothing (or a version key
// nothing needs), only while it is as read: a claim that rewrote it since
// (the address claimed again for the tenant) keeps it.
func removeRecord(m etcdkv.KV) etcdkv.Txn {
	return etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ModIs(string(m.Key), m.ModRevision)}, Then: []etcdkv.Op{etcdkv.Delete(string(m.Key))}}
}

// claimOps are what a new claim of ip in scope s adds to its transaction
// for the tenant: the condition that nobody claimed for it since the
// count, its record, the version, and the deletion of records that count
// nothing (each only while as read).
func (qs *quotaState) claimOps(l layout, s alloc.Scope, ip netip.Addr) ([]etcdkv.Cmp, []etcdkv.Op) {
	vk, mk := l.tenantVersion(qs.name), l.tenantMark(qs.name, s, ip)
	var cond []etcdkv.Cmp
	switch {
	case !qs.enforce:
	case qs.version != 0:
		cond = []etcdkv.Cmp{etcdkv.ModIs(vk, qs.version)}
	default:
		cond = []etcdkv.Cmp{etcdkv.Absent(vk)}
	}
	ops := []etcdkv.Op{etcdkv.Put(mk, nil), etcdkv.Put(vk, nil)}
	for _, m := range qs.stale {
		if string(m.Key) != mk {
			ops = append(ops, etcdkv.Nested(removeRecord(m)))
		}
	}
	return cond, ops
}

// moved reports a version key read (found or not) that differs from the
// count's: another claim for the tenant committed since (only where the
// claim enforces the quota).
func (qs *quotaState) moved(kv etcdkv.KV, found bool) bool {
	if !qs.enforce {
		return false
	}
	if !found {
		return qs.version != 0
	}
	return kv.ModRevision != qs.version
}

// readBatch bounds the reads of one request, and maxStaleDeletes the
// records that count nothing one claim deletes besides its own writes:
// etcd's default --max-txn-ops is 128.
const (
	readBatch       = 100
	maxStaleDeletes = 32
)

// tenantsOfClaims maps each claimed address ("<scope>/<address>", as in
// its claim key) that counts for a tenant to the tenant: what `leases`
// shows. Records that count nothing are left out.
func (op *operation) tenantsOfClaims() (map[string]string, error) {
	out := map[string]string{}
	err := op.judgeAll(func(m etcdkv.KV, live bool) {
		if live {
			tenant, where := op.keys.ofTenantRecord(string(m.Key))
			out[where] = tenant
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// judgeAll lists every tenant's records, page by page, judges them
// readBatch at a time and calls f with each. A batch that cannot be read
// is skipped; the errors are returned joined.
func (op *operation) judgeAll(f func(m etcdkv.KV, live bool)) error {
	marks, err := op.cl.List(op.keys.tenantsRoot(), true)
	if err != nil {
		return err
	}
	var errs []error
	for batch := range slices.Chunk(marks, readBatch) {
		live, err := op.judge(batch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, m := range batch {
			f(m, live[i])
		}
	}
	return errors.Join(errs...)
}
