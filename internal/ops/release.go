package ops

import (
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/utils"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Location names a network or a pool (or, both set, a network's
// reservations in a pool).
type Location struct {
	Network string
	Pool    string
}

// Validate checks each name that is set, on its own: they become paths
// in a data dir and key segments in etcd, so every backend applies the
// same rules.
func (t Location) Validate() error {
	if t.Pool != "" {
		if err := pool.ValidName("--pool", t.Pool); err != nil {
			return err
		}
	}
	if t.Network != "" && (len(t.Network) > netconf.MaxNameLen || utils.ValidateNetworkName(t.Network) != nil) {
		return fmt.Errorf("invalid --network %q: must match [a-zA-Z0-9][a-zA-Z0-9_.-]*", t.Network)
	}
	return nil
}

// existingDir is t's state directory under the data dir (the pool's when
// Pool is set, else the network's), which must exist: a plugin's Open
// creates a missing state directory, an operator's typo must not.
func (b Local) existingDir(t Location) (StateScope, error) {
	if err := t.Validate(); err != nil {
		return StateScope{}, err
	}
	if t.Pool == "" && t.Network == "" {
		return StateScope{}, fmt.Errorf("name a --network or a --pool")
	}
	d := stateDirOf(b.DataDir, alloc.Scope{Network: t.Network})
	if t.Pool != "" {
		d = stateDirOf(b.DataDir, alloc.Scope{Pool: t.Pool})
	}
	if fi, err := os.Lstat(d.Dir); err != nil || !fi.IsDir() {
		return d, fmt.Errorf("no state directory %s for %s", d.Dir, d.Label())
	}
	return d, nil
}

// ReleaseRequest frees one reservation, or a sticky key's holds, in
// Location's state: the engine's request (alloc.ReleaseRequest; its Node
// a shared Backend's only, the backend setting Where).
type ReleaseRequest struct {
	Location
	alloc.ReleaseRequest
	DryRun bool
}

// Release frees r.Addr, or r.Key's holds, in b, as the engine
// plans it (alloc.PlanRelease) over what b reads; it returns the lease as
// it was, from what was read and planned, alike for every backend.
func Release(b Backend, r ReleaseRequest) (Lease, error) {
	if err := r.Validate(); err != nil {
		return Lease{}, err
	}
	p, err := b.Release(r)
	if err != nil {
		return Lease{}, err
	}
	res, node := hostlocal.Reservation{Addr: r.Addr, Owner: p.Owner}, p.Node
	if p.Holds != nil {
		e := &p.Holds[0]
		p.Record, res, node = e, hostlocal.Reservation{Addr: e.Addr, Owner: alloc.HoldOwner(e.ID)}, e.LastNode
	}
	res.Problem = res.Owner.Problem()
	l := leaseOf(alloc.Scope{Network: r.Network, Pool: r.Pool}, res, p.Record)
	l.Node = node
	return l, nil
}

// Release plans and applies r in its state directory under the lock, as
// a plugin's DEL would (the index entry goes with it and the stamp stays
// valid, so the next plugin run does not rebuild); a dry run reads without
// the lock. It ignores r.Node.
func (b Local) Release(r ReleaseRequest) (p alloc.ReleasePlan, err error) {
	d, err := b.existingDir(r.Location)
	if err != nil {
		return p, err
	}
	q := r.ReleaseRequest
	if q.Where, q.Node = d.Label(), ""; r.DryRun {
		v, err := alloc.ReadRelease(hostlocal.Reader(d.Dir), q)
		if err != nil {
			return p, err
		}
		return alloc.PlanRelease(v, q, b.now())
	}
	disk, err := hostlocal.Open(d.Dir, b.LockTimeout)
	if err != nil {
		return p, err
	}
	_, p, err = alloc.OperatorRelease(disk, q, b.now())
	if cerr := disk.Close(); err == nil {
		err = cerr
	}
	return p, err
}
