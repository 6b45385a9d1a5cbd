package etcdadmin

import (
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// GC releases every claim of node (optionally only in f's pool, or of
// f's network) that keep does not keep, and the expired holds there, by
// the driver and the rules of the CNI GC (etcdstore.Operator.GC, which
// says when dropFences drops the node's fence buckets). Without apply it
// only returns the plan: the claims sorted by node, scope and address,
// then the holds.
func (a *Admin) GC(node string, f Filter, keep alloc.KeepSet, apply, dropFences bool) ([]Lease, error) {
	out, err := a.Operator.GC(node, f.Network, f.Pool, keep, apply, dropFences)
	held := slices.IndexFunc(out, func(l Lease) bool { return l.Held })
	if held < 0 {
		held = len(out)
	}
	sortLeases(out[:held])
	return out, err
}
