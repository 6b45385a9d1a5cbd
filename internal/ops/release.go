package ops

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/utils"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
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
func (b Local) existingDir(t Location) (StateDir, error) {
	if err := t.Validate(); err != nil {
		return StateDir{}, err
	}
	var d StateDir
	switch {
	case t.Pool != "":
		d = StateDir{Kind: "pool", Name: t.Pool, Path: dapools.PoolDir(b.DataDir, t.Pool)}
	case t.Network != "":
		d = StateDir{Kind: "network", Name: t.Network, Path: filepath.Join(b.DataDir, t.Network)}
	default:
		return StateDir{}, fmt.Errorf("name a --network or a --pool")
	}
	if fi, err := os.Lstat(d.Path); err != nil || !fi.IsDir() {
		return d, fmt.Errorf("no state directory %s for %s", d.Path, d.Label())
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

// Release frees r.Addr under the directory's lock, as a plugin's DEL
// would (the index entry goes with it and the stamp stays valid, so the
// next plugin run does not rebuild), after checking that it is reserved
// and, when asked, held by the named container. It returns the lease as
// it was. A dry run reads without the lock and changes nothing.
func (b Local) Release(r ReleaseRequest) (Lease, error) {
	d, err := b.existingDir(r.Location)
	if err != nil {
		return Lease{}, err
	}
	if r.StickyKey != "" {
		return b.releaseSticky(d, r)
	}
	if !r.Addr.IsValid() {
		return Lease{}, fmt.Errorf("no address given")
	}
	if r.DryRun {
		res, ok, err := hostlocal.ReadReservation(d.Path, r.Addr)
		if err != nil {
			return Lease{}, err
		}
		if err := r.check(d, res.Owner, ok); err != nil {
			return Lease{}, err
		}
		holds, err := validHolds(d.Path)
		if h, held := holds[r.Addr.String()]; held && h.Held() {
			return Lease{}, alloc.HeldForKey(r.Addr, d.Label(), h.Key)
		}
		return withHold(leaseOf(d, res), holds), err
	}
	disk, err := hostlocal.Open(d.Path, b.LockTimeout)
	if err != nil {
		return Lease{}, err
	}
	owner, ok, err := disk.Owner(r.Addr)
	var share *alloc.HoldRecord
	if err == nil && ok && r.Container != "" && owner.ContainerID != r.Container {
		share, err = r.migrationShare(disk)
	}
	if err == nil && share == nil {
		err = r.check(d, owner, ok)
	}
	var keyed *alloc.HoldRecord
	switch {
	case err != nil:
	case share != nil:
		// The migration target's share ends, as its DEL would end it.
		err = alloc.DropSecond(disk, *share)
		owner.ContainerID, keyed = share.Second, share
	default:
		keyed, err = alloc.ReleaseAddr(disk, owner, r.Addr, d.Label(), time.Now())
	}
	if cerr := disk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Lease{}, err
	}
	l := leaseOf(d, hostlocal.Reservation{Addr: r.Addr, Owner: owner, Problem: owner.Problem()})
	if keyed != nil {
		l.StickyKey, l.SecondOwner, l.SecondMigration = keyed.Key, keyed.Second, keyed.SecondMigration
	}
	return l, nil
}

// migrationShare is the record of r.Addr whose migration target is
// r.Container (and r.IfName, when set), nil when there is none.
func (r ReleaseRequest) migrationShare(disk *hostlocal.Disk) (*alloc.HoldRecord, error) {
	holds, err := alloc.ListHolds(disk)
	for _, e := range holds {
		if e.Addr == r.Addr && e.Stale == "" && !e.Held() && e.Second == r.Container && (r.IfName == "" || r.IfName == e.IfName) {
			return &e, err
		}
	}
	return nil, err
}

func (r ReleaseRequest) check(d StateDir, owner alloc.Attachment, reserved bool) error {
	switch {
	case !reserved:
		return fmt.Errorf("%s is not reserved in %s", r.Addr, d.Label())
	case r.Container != "" && owner.ContainerID != r.Container:
		return fmt.Errorf("%s in %s is held by container %q, not %q", r.Addr, d.Label(), owner.ContainerID, r.Container)
	case r.IfName != "" && owner.IfName != r.IfName:
		return fmt.Errorf("%s in %s is held by interface %q of container %q, not %q", r.Addr, d.Label(), owner.IfName, owner.ContainerID, r.IfName)
	}
	return nil
}

// releaseSticky frees every hold of r.StickyKey (and r.IfName) in d: the
// address file, then the record, as an expiry does. A key whose address
// a container has is refused: delete that container, or release the
// address itself.
func (b Local) releaseSticky(d StateDir, r ReleaseRequest) (Lease, error) {
	leaseOfHold := func(e alloc.HoldRecord) Lease {
		l := Lease{Address: e.Address, Network: e.Network, IfName: e.IfName, Owner: "sticky", StickyKey: e.Key, LastOwner: e.LastOwner, HoldExpires: e.Expires.UTC()}
		if d.Kind == "pool" {
			l.Pool = d.Name
		} else {
			l.Network = d.Name
		}
		return l
	}
	var found []alloc.HoldRecord
	if r.DryRun {
		holds, err := hostlocal.ReadHolds(d.Path)
		if err == nil {
			found, err = alloc.KeyHolds(holds, r.StickyKey, r.IfName, d.Label())
		}
		if err != nil {
			return Lease{}, err
		}
		return leaseOfHold(found[0]), nil
	}
	disk, err := hostlocal.Open(d.Path, b.LockTimeout)
	if err != nil {
		return Lease{}, err
	}
	found, err = alloc.ReleaseKey(disk, r.StickyKey, r.IfName, d.Label())
	if cerr := disk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Lease{}, err
	}
	return leaseOfHold(found[0]), nil
}
