package ops

import (
	"fmt"
	"net/netip"
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

// ReleaseRequest frees one reservation.
type ReleaseRequest struct {
	Location
	Addr      netip.Addr
	Container string // when set, must be the owner's container ID exactly
	IfName    string // when set (with Container), must be the owner's ifname
	DryRun    bool
	Node      string // a shared Backend's only: refuse unless this host holds it
	// StickyKey, instead of Addr, frees the holds of that sticky key (of
	// IfName only, when set) in the directory; a key whose address a
	// container still has is refused.
	StickyKey string
}

// Release frees r.Addr, or r.StickyKey's holds, under the directory's
// lock, as a plugin's DEL would (the index entry goes with it and the
// stamp stays valid, so the next plugin run does not rebuild). The engine
// decides (alloc.PlanRelease) over what is read; it returns the lease as
// it was. A dry run reads without the lock, plans the same, and changes
// nothing.
func (b Local) Release(r ReleaseRequest) (Lease, error) {
	d, err := b.existingDir(r.Location)
	if err != nil {
		return Lease{}, err
	}
	q := alloc.ReleaseRequest{Addr: r.Addr, Key: r.StickyKey, Container: r.Container, IfName: r.IfName, Where: d.Label()}
	var v alloc.ReleaseView
	var p alloc.ReleasePlan
	if r.DryRun {
		v, err = alloc.ReadRelease(hostlocal.Reader(d.Dir), q)
		if err == nil {
			p, err = alloc.PlanRelease(v, q, b.now())
		}
	} else {
		var disk *hostlocal.Disk
		if disk, err = hostlocal.Open(d.Dir, b.LockTimeout); err != nil {
			return Lease{}, err
		}
		v, p, err = alloc.OperatorRelease(disk, q, b.now())
		if cerr := disk.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return Lease{}, err
	}
	if p.Holds != nil {
		e := p.Holds[0]
		return leaseOf(d, hostlocal.Reservation{Addr: e.Addr, Owner: alloc.HoldOwner(e.ID)}, &e), nil
	}
	owner := v.Owner
	if p.Del.Step == alloc.DelDropSecond {
		owner.ContainerID = p.Record.Second
	}
	return leaseOf(d, hostlocal.Reservation{Addr: r.Addr, Owner: owner, Problem: owner.Problem()}, p.Record), nil
}
