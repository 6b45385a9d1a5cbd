// Package etcdops is the etcd backend of the operators' commands: what
// `cniplugins-full leases|release|gc --etcd ENDPOINTS` act on, for a node
// that is gone for good (its runtime will never send the DEL or GC that
// would free its claims). The full flavour's main hands Open to
// cli.Flavour.Etcd; nothing else names this package, so the lean binary
// never links it.
package etcdops

import (
	"fmt"

	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// Open validates c as ipam.etcd is validated and returns the backend.
func Open(c ops.EtcdConfig) (ops.Remote, error) {
	ad, err := daetcd.NewAdmin(c)
	if err != nil {
		return nil, err
	}
	return remote{ad}, nil
}

type remote struct{ ad *daetcd.Admin }

func (r remote) Leases(f ops.LeaseFilter) ([]ops.Lease, error) {
	ls, err := r.ad.Leases(daetcd.Filter{Node: f.Node, Network: f.Network, Pool: f.Pool, Container: f.Container})
	return leasesOf(ls), err
}

// Release frees one claim. With Node, it first reads the claim and
// refuses unless that node holds it; the release then names the owner it
// read, so a claim that changed hands in between is not freed.
func (r remote) Release(q ops.ReleaseRequest) (ops.Lease, error) {
	if err := validNames(q.Target); err != nil {
		return ops.Lease{}, err
	}
	s := dapools.Scope{Network: q.Network, Pool: q.Pool}
	if q.Node != "" {
		if err := daetcd.ValidNodeName("--node", q.Node); err != nil {
			return ops.Lease{}, err
		}
		l, err := r.ad.Release(q.Addr, s, q.Container, q.IfName, true)
		if err != nil {
			return ops.Lease{}, err
		}
		if l.Node != q.Node {
			return ops.Lease{}, fmt.Errorf("%s in %s is held by node %q, not %q", q.Addr, l.ScopeName(), l.Node, q.Node)
		}
		q.Container, q.IfName = l.ContainerID, l.IfName
	}
	l, err := r.ad.Release(q.Addr, s, q.Container, q.IfName, q.DryRun)
	if err != nil {
		return ops.Lease{}, err
	}
	return leaseOf(l), nil
}

func (r remote) GC(q ops.GCRequest) ([]ops.Lease, error) {
	if err := validNames(q.Target); err != nil {
		return nil, err
	}
	ls, err := r.ad.GC(q.Node, daetcd.Filter{Network: q.Network, Pool: q.Pool}, q.Keep, q.Apply)
	return leasesOf(ls), err
}

// validNames applies the local commands' rules for --network and --pool
// (they become key segments here, paths there), each name on its own.
func validNames(t ops.Target) error {
	for _, one := range []ops.Target{{Network: t.Network}, {Pool: t.Pool}} {
		if one.Network+one.Pool == "" {
			continue
		}
		if _, err := one.Dir(); err != nil {
			return err
		}
	}
	return nil
}

func leasesOf(ls []daetcd.Lease) []ops.Lease {
	out := make([]ops.Lease, len(ls))
	for i, l := range ls {
		out[i] = leaseOf(l)
	}
	return out
}

func leaseOf(l daetcd.Lease) ops.Lease {
	out := ops.Lease{
		Address: l.Address, Network: l.Network, Pool: l.Scope.Pool, ContainerID: l.ContainerID, IfName: l.IfName,
		Owner: hostlocal.Attachment{ContainerID: l.ContainerID, IfName: l.IfName}.Kind(), Since: l.Since().UTC(), Node: l.Node,
	}
	if out.Network == "" {
		out.Network = l.Scope.Network
	}
	if l.Address == "" {
		out.Owner = ops.OwnerMarker
	}
	return out
}
