package main

import (
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// etcdBackend is the ops.Backend of `leases`, `release`, `gc` and `pools --etcd`:
// ipam-da-etcd's claims, for a node that is gone for good (its runtime
// will never send the DEL or GC that would free them). etcdstore.Operator does
// the work, in ops' own shape (ops.Lease); this is only the seam, kept in
// this main so that ops never imports etcdstore and the lean binary links
// neither the etcd client nor this.
type etcdBackend struct{ ad *etcdstore.Operator }

// openEtcd is the full flavour's Etcd: it validates c as ipam.etcd is
// validated.
func openEtcd(c clusteraccess.Access) (ops.Backend, error) {
	ad, err := etcdstore.OpenOperator(c)
	if err != nil {
		return nil, err
	}
	return etcdBackend{ad}, nil
}

// Shared is true: every node's claims are in one cluster.
func (etcdBackend) Shared() bool { return true }

func (b etcdBackend) Leases(f ops.LeaseFilter) ([]ops.Lease, error) {
	ls, err := b.ad.Leases(f.Node, f.Pool)
	if err != nil {
		return nil, err
	}
	nodes, err := b.ad.Nodes()
	if err != nil {
		return nil, err
	}
	for i := range ls {
		ls[i].NodeSeen = nodes[ls[i].Node].LastSeen.UTC()
	}
	return f.Select(ls), nil
}

// Release is etcdstore's: with Node, the engine refuses unless that node
// has the attachment the release releases, over the one read that the
// release's transaction is guarded by.
func (b etcdBackend) Release(r ops.ReleaseRequest) (alloc.ReleasePlan, error) {
	return b.ad.Release(alloc.Scope{Network: r.Network, Pool: r.Pool}, r.ReleaseRequest, r.DryRun)
}

func (b etcdBackend) GC(q ops.GCRequest) ([]ops.Lease, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	keep := alloc.NewKeepSet(q.Network, q.Keep)
	if q.Runtime != nil {
		// gc --cri: the node is this live host, its runtime says what lives.
		keep = alloc.NewRuntimeKeepSet(*q.Runtime)
	} else if q.Apply && !q.Force {
		if err := b.ad.CheckGone(q.Node, q.DeadAfter); err != nil {
			return nil, err
		}
	}
	return b.ad.GC(q.Node, q.Network, q.Pool, keep, q.Apply, q.Runtime == nil && len(q.Keep) == 0)
}

// States reads what pools counts in each scope.
func (b etcdBackend) States(scopes []ops.StateScope) ([]alloc.ScopeState, error) {
	ss := make([]alloc.Scope, len(scopes))
	for i, s := range scopes {
		ss[i] = s.Scope
	}
	return b.ad.ScopeStates(ss)
}
