package etcdstore

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// GC releases every claim of node (optionally only in one pool, or of
// one network) that keep does not keep, and the expired holds there, by
// the driver and the rules of the CNI GC (gc.go). Without apply it only
// returns the plan. With apply it then removes the tenant records that
// count nothing, as the CNI GC does (tenantgc.go); and with dropFences
// (the node is gone, keep keeps none of its attachments) and neither
// filter, its fence buckets go too, the node's last keys but its record
// (fence.go), deleted after the releases so that a GC cut short keeps
// them. A live node's ADDs still compare its buckets: its GC (`gc --cri`)
// never drops them.
func (o *Operator) GC(node, network, pool string, keep alloc.KeepSet, apply, dropFences bool) ([]ops.Lease, error) {
	if err := ValidNodeName("--node", node); err != nil {
		return nil, err
	}
	run := gcRun{node: node, network: network, pool: pool, index: []string{o.op.keys.nodePrefix(node)},
		holds: []string{o.op.keys.prefix + "sticky/"}, keep: keep.Keeps}
	plan, err := o.op.collect(run, !apply)
	if !apply {
		return plan, err
	}
	if err == nil && dropFences && pool == "" && network == "" {
		var del []etcdkv.Op
		for b := range fenceBuckets {
			del = append(del, etcdkv.Delete(o.op.keys.fenceKey(node, b)))
		}
		_, err = o.op.cl.Txn(etcdkv.Txn{Then: del})
	}
	// The tenant records go as with the CNI GC (Operation.GC), whatever the
	// releases' outcome: the sweep judges each record by its own claim.
	return plan, errors.Join(err, o.op.sweepTenants())
}
