package daetcd

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// GC releases every claim of node (optionally only in one scope, or of
// one network) whose attachment is not in keep, by the rule every GC
// follows (alloc.KeepSet): a keep entry without an ifname keeps every
// attachment of its container. Without apply it only returns the plan;
// with apply it then removes the tenant records that count nothing, as
// the CNI GC does (tenantgc.go).
func (a *Admin) GC(node string, f Filter, keep []alloc.Attachment, apply bool) ([]Lease, error) {
	if node == "" {
		return nil, cnierr.MissingConfig("--node")
	}
	f.Node = node
	leases, err := a.Leases(f)
	if err != nil {
		return nil, err
	}
	keeps := alloc.NewKeepSet(f.Network, keep).Keeps
	var plan, shared []Lease
	perScope := map[alloc.Scope]*scopeGC{}
	of := func(s alloc.Scope) *scopeGC {
		if perScope[s] == nil {
			perScope[s] = &scopeGC{marks: unmark{}}
		}
		return perScope[s]
	}
	for _, l := range leases {
		switch alloc.PlanClaim(l.attachment(), l.Held, l.sharing(), keeps) {
		case alloc.ClaimShareEnds:
			plan, shared = append(plan, l), append(shared, l)
		case alloc.ClaimReleased:
			plan = append(plan, l)
			of(l.Scope).release(a.op, l.Scope, l.key, l.Record, "")
		}
	}
	// Expired holds go too (alloc.HoldEnds).
	holdScopes, err := a.holdScopes(f)
	if err != nil {
		return nil, err
	}
	for _, s := range holdScopes {
		hls, err := a.op.expiredHolds(s, f.Network, of(s))
		if err != nil {
			return nil, err
		}
		for _, hl := range hls {
			plan = append(plan, hl.lease())
		}
	}
	if !apply {
		return plan, nil
	}
	err = a.collect(node, shared, perScope, len(keep) == 0 && f.Pool == "" && f.Network == "")
	// The tenant records go as with the CNI GC (op.gc), whatever the
	// releases' outcome: the sweep judges each record by its own claim.
	return plan, errors.Join(err, a.op.sweepTenants())
}

// collect is GC's releases of node's claims: the shares of migrations'
// owners, as their DEL would (migration.go), then each scope's batches;
// with all, everything of the node is gone, and so are its fence buckets,
// the node's last keys but its record (fence.go), deleted after the
// releases so that a GC cut short keeps them.
func (a *Admin) collect(node string, shared []Lease, perScope map[alloc.Scope]*scopeGC, all bool) error {
	for _, l := range shared {
		if err := a.op.gcShared(l.Scope, l.key, l.Record, ""); err != nil {
			return err
		}
	}
	for _, sg := range perScope {
		if err := a.op.commitBatches(sg.txns, sg.marks); err != nil {
			return err
		}
	}
	if !all {
		return nil
	}
	var del []etcdkv.Op
	for b := range fenceBuckets {
		del = append(del, etcdkv.Delete(a.op.keys.fenceKey(node, b)))
	}
	_, err := a.op.cl.Txn(etcdkv.Txn{Then: del})
	return err
}

// scopeGC is one scope's releases with that scope's marks only: a batch
// carrying every scope's would pass etcd's --max-txn-ops once a cluster
// has a few pools to clean.
type scopeGC struct {
	txns  []etcdkv.Txn
	marks unmark
}

// release adds the release of claim r, found through index key kv in
// scope s, for a GC of network ("" for any), with its range set's mark
// and its attachment's fence bucket (fence.go: see bump).
func (sg *scopeGC) release(op *operation, s alloc.Scope, kv etcdkv.KV, r Record, network string) {
	t, _ := op.release(s, kv, network, false)
	sg.txns = append(sg.txns, t)
	sg.marks[op.keys.markOf(s, string(kv.Key))] = nil
	sg.marks[op.keys.fenceOf(r.Node, r.ContainerID, r.IfName)] = []byte(op.nonce)
}
