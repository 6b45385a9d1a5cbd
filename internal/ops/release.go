package ops

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/utils"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Target names one state directory by network or pool.
type Target struct {
	DataDir string
	Network string
	Pool    string
}

// Dir validates the names (they become paths) and returns the state
// directory: the pool's when Pool is set, else the network's.
func (t Target) Dir() (StateDir, error) {
	switch {
	case t.Pool != "":
		if err := pool.ValidName("--pool", t.Pool); err != nil {
			return StateDir{}, err
		}
		return StateDir{Kind: "pool", Name: t.Pool, Path: dapools.PoolDir(t.DataDir, t.Pool)}, nil
	case t.Network != "":
		if len(t.Network) > netconf.MaxNameLen || utils.ValidateNetworkName(t.Network) != nil {
			return StateDir{}, fmt.Errorf("invalid --network %q: must match [a-zA-Z0-9][a-zA-Z0-9_.-]*", t.Network)
		}
		return StateDir{Kind: "network", Name: t.Network, Path: filepath.Join(t.DataDir, t.Network)}, nil
	}
	return StateDir{}, fmt.Errorf("name a --network or a --pool")
}

// existingDir is Dir for commands that must not create anything: a
// plugin's Open creates a missing state directory, an operator's typo
// must not.
func (t Target) existingDir() (StateDir, error) {
	d, err := t.Dir()
	if err != nil {
		return d, err
	}
	if fi, err := os.Lstat(d.Path); err != nil || !fi.IsDir() {
		return d, fmt.Errorf("no state directory %s for %s", d.Path, d.Label())
	}
	return d, nil
}

// ReleaseRequest frees one reservation.
type ReleaseRequest struct {
	Target
	Addr        netip.Addr
	Container   string // when set, must be the owner's container ID exactly
	IfName      string // when set (with Container), must be the owner's ifname
	DryRun      bool
	LockTimeout time.Duration
	Node        string // a Remote's only: refuse unless this host holds it
}

// Release frees r.Addr under the directory's lock, as a plugin's DEL
// would (the index entry goes with it and the stamp stays valid, so the
// next plugin run does not rebuild), after checking that it is reserved
// and, when asked, held by the named container. It returns the lease as
// it was. A dry run reads without the lock and changes nothing.
func Release(r ReleaseRequest) (Lease, error) {
	d, err := r.existingDir()
	if err != nil {
		return Lease{}, err
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
		return leaseOf(d, res), nil
	}
	disk, err := hostlocal.Open(d.Path, r.LockTimeout)
	if err != nil {
		return Lease{}, err
	}
	owner, ok, err := disk.Owner(r.Addr)
	if err == nil {
		err = r.check(d, owner, ok)
	}
	if err == nil {
		// Free releases exactly this address, only while owner holds it,
		// and clears the exhaustion mark as any release does.
		_, err = hostlocal.NewAllocator(disk).Free(owner, []netip.Addr{r.Addr})
	}
	if cerr := disk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Lease{}, err
	}
	return leaseOf(d, hostlocal.Reservation{Addr: r.Addr, Owner: owner, Problem: owner.Problem()}), nil
}

func (r ReleaseRequest) check(d StateDir, owner hostlocal.Attachment, reserved bool) error {
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
