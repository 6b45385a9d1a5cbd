package etcdstore

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Quotas in etcd (docs/etcd.md, "Tenant quotas (cluster-wide)"): a
// tenant's record of an address is written by the claim's transaction,
// so it counts while the claim key lives at the record's mod revision
// (alloc.TenantRecord.Stale judges). Releases write nothing here, so DEL
// keeps its one round trip.

func (l layout) tenantsRoot() string              { return l.prefix + "tenant/" }
func (l layout) tenantPrefix(name string) string  { return l.tenantsRoot() + name + "/" }
func (l layout) tenantVersion(name string) string { return l.versionsRoot() + name }
func (l layout) versionsRoot() string             { return l.prefix + "tenantv/" }

// quotaState is an ADD's last count of its tenant.
type quotaState struct {
	q       *pool.Quota
	name    string      // pool.TenantName
	version int64       // the version key's mod revision at the count; 0: absent
	stale   []etcdkv.KV // records that count nothing, to delete
	// enforce: the target's gate counted (alloc.Add's InUse), so its claims
	// require the version; else they only record the address as the tenant's.
	enforce bool
	counted []alloc.Scope // alloc.CountScopes
}

// newQuotaState is the state of quota q for an ADD of targets.
func newQuotaState(q *pool.Quota, targets []alloc.Target) *quotaState {
	if q == nil {
		return nil
	}
	return &quotaState{q: q, name: pool.TenantName(q.Tenant), counted: alloc.CountScopes(q, targets)}
}

// count reads the tenant's records and version, then the claims they
// name: the addresses the tenant has, cluster-wide.
func (op *Operation) count(qs *quotaState) (int, error) {
	resp, err := op.cl.Read(etcdkv.GetPrefix(op.keys.tenantPrefix(qs.name)), etcdkv.Get(op.keys.tenantVersion(qs.name)))
	if err != nil {
		return 0, err
	}
	v, _ := resp.First(1)
	qs.version, qs.stale = v.ModRevision, nil
	recs, read, err := op.judge(resp.KVs(0))
	n, stale := alloc.CountTenant(recs, qs.counted)
	for _, i := range stale[:min(len(stale), maxStaleDeletes)] {
		qs.stale = append(qs.stale, read[i])
	}
	return n, err
}

// judge reads, readBatch records at a time (of any tenants), the claims
// they name, for the engine to judge each record
// (alloc.TenantRecord.Stale: reserved is the claim key at the record's
// mod revision as its create revision): count, leases and GC's sweep. It
// answers the records read and, at the same index, their keys; a batch
// that cannot be read is left out, and the errors are returned joined.
func (op *Operation) judge(kvs []etcdkv.KV) ([]alloc.TenantRecord, []etcdkv.KV, error) {
	var recs []alloc.TenantRecord
	var read []etcdkv.KV
	var errs []error
	for batch := range slices.Chunk(kvs, readBatch) {
		reads := make([]etcdkv.Op, len(batch))
		judged := make([]alloc.TenantRecord, len(batch))
		for i, m := range batch {
			s, name, _ := op.keys.scopeIn(string(m.Key))
			tenant, _ := hex.DecodeString(name)
			ip, _ := netip.ParseAddr(lastSegment(string(m.Key)))
			judged[i] = alloc.TenantRecord{Tenant: string(tenant), Scope: s, Addr: ip}
			reads[i] = etcdkv.Get(op.keys.addrKey(s, ip))
		}
		resp, err := op.cl.Read(reads...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, m := range batch {
			c, ok := resp.First(i)
			judged[i].Reserved = ok && c.CreateRevision == m.ModRevision
		}
		recs, read = append(recs, judged...), append(read, batch...)
	}
	return recs, read, errors.Join(errs...)
}

// removeRecord deletes a record that counts nothing (or a version key
// nothing needs, or a hold that pins nothing, or an expired hold and its
// claim), only while it is as read: a claim that rewrote it since (the
// address claimed again for the tenant) keeps it.
func removeRecord(m etcdkv.KV) etcdkv.Txn {
	return etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ModIs(string(m.Key), m.ModRevision)}, Then: []etcdkv.Op{etcdkv.Delete(string(m.Key))}}
}

// claimOps adds to the conditions and writes of a new claim of ip in
// scope s what it needs for the tenant: where it enforces the quota, the
// condition that nobody claimed for it since the count; its record, the
// version, and the deletion of records that count nothing (each only
// while as read).
func (qs *quotaState) claimOps(l layout, s alloc.Scope, ip netip.Addr, cond []etcdkv.Cmp, then []etcdkv.Op) ([]etcdkv.Cmp, []etcdkv.Op) {
	// The record's key names the address as its claim key does (judge).
	vk, mk := l.tenantVersion(qs.name), l.tenantPrefix(qs.name)+s.Path()+"/"+ip.String()
	if qs.enforce {
		cond = append(cond, atRev(vk, qs.version))
	}
	then = append(then, etcdkv.Put(mk, nil), etcdkv.Put(vk, nil))
	for _, m := range qs.stale {
		if string(m.Key) != mk {
			then = append(then, etcdkv.Nested(removeRecord(m)))
		}
	}
	return cond, then
}

// readBatch bounds the reads of one request, and maxStaleDeletes the
// records that count nothing one claim deletes besides its own writes:
// etcd's default --max-txn-ops is 128.
const (
	readBatch       = 100
	maxStaleDeletes = 32
)

// tenantRecords lists every tenant's records, page by page, and judges
// them (judge): tenants maps each claimed address ("<scope>/<address>",
// as in its claim key) that counts for a tenant to the tenant (what
// `leases` and `pools` show); dead removes the records that count nothing
// (GC's sweep). The records of a batch that could not be read are in
// neither, and the error is returned.
func (op *Operation) tenantRecords() (tenants map[string]string, dead []etcdkv.Txn, err error) {
	marks, err := op.cl.List(op.keys.tenantsRoot(), true)
	if err != nil {
		return nil, nil, err
	}
	recs, read, err := op.judge(marks)
	tenants = map[string]string{}
	for i, r := range recs {
		if r.Stale() != "" {
			dead = append(dead, removeRecord(read[i]))
		} else {
			tenants[r.Scope.Path()+"/"+r.Addr.String()] = r.Tenant
		}
	}
	return tenants, dead, err
}
