// Package dockeripam is Docker's remote IPAM driver (libnetwork's plugin
// API v1) over the same pools and state directories as ipam-da-pools, so
// that Docker containers and CNI containers on one host draw from one
// pool and can never get the same address.
//
// Every address the driver hands out is a reservation file in the pool's
// directory, written by the allocation engine's disk store under the
// same lock and index as a CNI ADD. Its owner follows the project's
// convention for owners that are not CNI attachments: container ID
// "_docker" (a CNI container ID cannot start with '_'), the Docker pool's
// ID as the interface name, and network "_docker" (no CNI network can
// have that name), so that a CNI DEL
// or GC can never free it. The driver's own bookkeeping (which pools
// Docker holds, their reference counts) lives in <dataDir>/_docker.
package dockeripam

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// Owner is the container ID and network recorded in every reservation the
// driver makes.
const Owner = "_docker"

// Driver serves the IPAM API. One mutex serialises requests: they are
// rare (one per network or container change) and each is a few system
// calls, so ordering them is simpler than reasoning about interleavings
// of reference counts.
type Driver struct {
	mu    sync.Mutex
	cfg   Config
	store *stateStore
	st    *state
	log   *logging.Logger
}

// Open takes the state directory's lock and loads the state.
func Open(cfg Config, log *logging.Logger) (*Driver, error) {
	store, st, err := openStateStore(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, store: store, st: st, log: log}, nil
}

// Close releases the state directory.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.store.close()
}

// pool returns the Docker pool id; the caller holds d.mu.
func (d *Driver) pool(id string) (*poolState, error) {
	p, ok := d.st.Pools[id]
	if !ok {
		return nil, fmt.Errorf("unknown pool ID %q", id)
	}
	return p, nil
}

// parseIP parses an address of a request: a bare IP, no zone.
func parseIP(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("address %q: not an IP address", s)
	}
	return ip.Unmap(), nil
}

// attachment is the owner of pool id's reservations.
func attachment(id string) alloc.Attachment {
	return alloc.Attachment{ContainerID: Owner, IfName: id, Network: Owner}
}

// poolDir is pool name's state directory: ipam-da-pools' own, so that a
// pool is one directory whichever program allocates from it.
func (d *Driver) poolDir(name string) string {
	return dapools.ScopeDir(d.cfg.DataDir, alloc.Scope{Pool: name})
}

// update applies change to the state and saves it; if saving fails, the
// state in memory is put back as it was, so memory and disk never
// disagree.
func (d *Driver) update(change func(*state)) error {
	before := d.st.clone()
	change(d.st)
	if err := d.store.save(d.st); err != nil {
		d.st = before
		return err
	}
	return nil
}

func (s *state) clone() *state {
	c := &state{Version: s.Version, Pools: make(map[string]*poolState, len(s.Pools))}
	for id, p := range s.Pools {
		cp := *p
		cp.Gateways = slices.Clone(p.Gateways)
		c.Pools[id] = &cp
	}
	return c
}
