package daetcd

import (
	"errors"
	"time"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// A claim's condition is that its keys are absent (or that the index key
// is still the marker it takes over). Were a release to make them absent
// again, a copy of a claim that etcd applied after the attachment's DEL
// (a member stopped with the request in its socket, a copy held on the
// network) would claim an address for a container that no longer exists.
// So a release does not delete the index key: it leaves a fence there, the owner's record without an address, marked released.
// Every copy of an earlier claim requires that key absent, or at the
// revision of a marker the fence replaced, and so fails. A new ADD of the
// same container and interface takes the fence over like a failed ADD's
// marker (one more round trip, for that re-ADD only); the ADD's common
// path, a new attachment, is unchanged.
//
// The fences are garbage, and etcd collects them: each is put with a
// lease the host shares across its releases (etcdkv.Client.Lease,
// remembered between execs, so one grant per fenceFor per host), and
// lives between fenceFor and twice that. A claim delayed longer than
// fenceFor after its release can still commit: it is then recorded under
// the attachment's index key, and GC frees it (docs/etcd.md, "Timeouts
// and late commits").
const fenceFor = 15 * time.Minute

// retire is what a release does to the index key slotK of record r:
// puts its fence, with the lease; an operator's release (no lease: the
// node is gone for good) deletes it.
func (op *operation) retire(slotK string, r Record) etcdkv.Op {
	if op.lease == 0 {
		return etcdkv.Delete(slotK)
	}
	f := Record{Node: r.Node, ContainerID: r.ContainerID, IfName: r.IfName, Network: r.Network, Pool: r.Pool,
		Time: stamp(op.now), Released: true}
	return etcdkv.PutLease(slotK, f.encode(), op.lease)
}

// fenced runs release, a command's releases, with the host's lease for
// fences; once more with a new lease when etcd no longer knows the one
// remembered (revoked, or a cluster restored from a backup).
func (op *operation) fenced(release func() error) error {
	for try := 0; ; try++ {
		var err error
		if op.lease, err = op.cl.Lease(fenceFor); err != nil {
			return err
		}
		err = release()
		if try > 0 || !errors.Is(err, etcdkv.ErrLeaseNotFound) {
			return err
		}
		op.cl.ForgetLease() // a forked client's refusal forgot it in its copy only
	}
}
