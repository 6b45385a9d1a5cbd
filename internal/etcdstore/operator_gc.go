package etcdstore

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// GC releases every claim of node (optionally only in one pool, or of
// one network) whose attachment is not in keep, and the expired holds
// there, by the driver and the rules of the CNI GC (gc.go): a keep entry
// without an ifname keeps every attachment of its container. Without
// apply it only returns the plan. With apply it then removes the tenant
// records that count nothing, as the CNI GC does (tenantgc.go); and with
// neither keep nor filter, everything of the node is gone, and so are
// its fence buckets, the node's last keys but its record (fence.go),
// deleted after the releases so that a GC cut short keeps them.
func (o *Operator) GC(node, network, pool string, keep []alloc.Attachment, apply bool) ([]Claim, error) {
	if node == "" {
		return nil, cnierr.MissingConfig("--node")
	}
	if err := ValidNodeName("--node", node); err != nil {
		return nil, err
	}
	run := gcRun{node: node, network: network, pool: pool, index: []string{o.op.keys.nodePrefix(node)},
		holds: []string{o.op.keys.prefix + "sticky/"}, keep: alloc.NewKeepSet(network, keep).Keeps}
	plan, err := o.op.collect(run, !apply)
	if !apply {
		return plan, err
	}
	if err == nil && len(keep) == 0 && pool == "" && network == "" {
		var del []etcdkv.Op
		for b := range fenceBuckets {
			del = append(del, etcdkv.Delete(o.op.keys.fenceKey(node, b)))
		}
		_, err = o.op.cl.Txn(etcdkv.Txn{Then: del})
	}
	// The tenant records go as with the CNI GC (op.gc), whatever the
	// releases' outcome: the sweep judges each record by its own claim.
	return plan, errors.Join(err, o.op.sweepTenants())
}

// scopeGC is one scope's releases with that scope's marks only: a batch
// carrying every scope's would pass etcd's --max-txn-ops once a cluster
// has a few pools to clean.
type scopeGC struct {
	txns  []etcdkv.Txn
	marks unmark
}

// release adds the release of the claim found through index key kv in
// scope s, for a GC of network ("" for any), with its range set's mark
// and its attachment's fence bucket (fence.go: see bump), and returns
// the claim's record.
func (sg *scopeGC) release(op *Operation, s alloc.Scope, kv etcdkv.KV, network string) Record {
	r, _ := decodeRecord(kv.Value)
	t, _ := op.release(s, kv, network, false)
	sg.txns = append(sg.txns, t)
	sg.marks[op.keys.markOf(s, string(kv.Key))] = nil
	sg.marks[op.keys.fenceOf(r.Node, r.ContainerID, r.IfName)] = []byte(op.nonce)
	return r
}
