package dockeripam

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// Cursors: dynamic allocation shares ipam-da-pools' round-robin cursor
// (range set 0 of a pool directory), so Docker and CNI walk a shared pool
// in one sequence. An --ip-range allocates from a narrower set, which
// keeps its own cursor so that the pool's exhaustion record (which CNI
// STATUS reads) is not set when only the sub-range is full.
const (
	poolCursor    = 0
	subPoolCursor = 1
)

// RequestAddress reserves an address of the pool for Docker: the next
// free one (round-robin, from the SubPool if any) when Address is empty,
// else exactly Address. A gateway request for a range's gateway needs no
// reservation: no allocator ever hands a gateway out.
func (d *Driver) RequestAddress(r RequestAddressRequest) (RequestAddressResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool(r.PoolID)
	if err != nil {
		return RequestAddressResponse{}, err
	}
	subnet, err := netip.ParsePrefix(p.Subnet)
	if err != nil {
		return RequestAddressResponse{}, fmt.Errorf("pool ID %q: corrupt state: %w", r.PoolID, err)
	}
	rs, exclude := d.ranges(p.Pool, subnet, p.Own)
	if len(rs) == 0 {
		return RequestAddressResponse{}, fmt.Errorf("pool %s no longer has a range in %s (was it removed from poolDefinitions?)", p.Pool, subnet)
	}
	var requested netip.Addr
	if r.Address != "" {
		if requested, err = parseIP(r.Address); err != nil {
			return RequestAddressResponse{}, err
		}
		if !subnet.Contains(requested) {
			return RequestAddressResponse{}, fmt.Errorf("address %s is outside pool %s (%s)", requested, p.Pool, subnet)
		}
	}
	if r.Options[RequestAddressType] == GatewayRequest {
		if gw, ok := rangeGateway(rs, requested); ok {
			if err := d.update(func(s *state) {
				s.Pools[r.PoolID].Gateways = append(s.Pools[r.PoolID].Gateways, gw.String())
			}); err != nil {
				return RequestAddressResponse{}, err
			}
			return d.reply(r.PoolID, netip.PrefixFrom(gw, subnet.Bits()), "gateway")
		}
	}
	addr, err := d.reserve(r.PoolID, p, rs, exclude, requested)
	if err != nil {
		return RequestAddressResponse{}, err
	}
	return d.reply(r.PoolID, addr, "address")
}

func (d *Driver) reply(id string, addr netip.Prefix, what string) (RequestAddressResponse, error) {
	d.log.Info(what+" reserved", logging.String("poolID", id), logging.Stringer("address", addr))
	return RequestAddressResponse{Address: addr.String(), Data: map[string]string{}}, nil
}

// rangeGateway is the gateway of a gateway request that needs no
// reservation: the first range's gateway when none is asked for, or the
// asked address when it is some range's gateway.
func rangeGateway(rs addrspace.RangeSet, asked netip.Addr) (netip.Addr, bool) {
	if !asked.IsValid() {
		return rs[0].Gateway, true
	}
	for _, r := range rs {
		if r.Gateway == asked {
			return asked, true
		}
	}
	return netip.Addr{}, false
}

// reserve writes the reservation file under the pool directory's lock,
// exactly as a CNI ADD on that pool does.
func (d *Driver) reserve(id string, p *poolState, rs addrspace.RangeSet, exclude addrspace.Exclusions, requested netip.Addr) (netip.Prefix, error) {
	disk, err := hostlocal.Open(d.poolDir(p.Pool), d.cfg.LockTimeout)
	if err != nil {
		return netip.Prefix{}, err
	}
	al := alloc.New(disk).Excluding(exclude)
	label := "pool " + p.Pool
	rangeID, set := poolCursor, rs
	if p.SubPool != "" && !requested.IsValid() {
		sub, _ := netip.ParsePrefix(p.SubPool)
		rangeID, set, label = subPoolCursor, restrict(rs, sub), label+" ip-range "+p.SubPool
	}
	addr, err := al.AllocateShared(attachment(id), rangeID, set, requested, label)
	if cerr := disk.Close(); cerr != nil {
		// The reservation is on disk; only the index missed its commit,
		// and the next operation rebuilds it.
		d.log.Warn("index not committed; it will be rebuilt", logging.Error(cerr))
	}
	return addr, err
}

// ReleaseAddress frees an address this driver reserved for this pool, and
// nothing else: another pool's, a CNI container's, or a free address is
// an error.
func (d *Driver) ReleaseAddress(r ReleaseAddressRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool(r.PoolID)
	if err != nil {
		return err
	}
	ip, err := parseIP(r.Address)
	if err != nil {
		return err
	}
	if i := slices.Index(p.Gateways, ip.String()); i >= 0 {
		return d.update(func(s *state) {
			s.Pools[r.PoolID].Gateways = slices.Delete(s.Pools[r.PoolID].Gateways, i, i+1)
		})
	}
	disk, err := hostlocal.Open(d.poolDir(p.Pool), d.cfg.LockTimeout)
	if err != nil {
		return err
	}
	owner, held, err := disk.Owner(ip)
	if err == nil && held && attachment(r.PoolID).Owns(owner) {
		_, err = alloc.Free(disk, attachment(r.PoolID), []netip.Addr{ip})
	}
	err = errors.Join(err, disk.Close())
	switch {
	case err != nil:
		return err
	case !held:
		return fmt.Errorf("address %s is not reserved in pool %s", ip, p.Pool)
	case !attachment(r.PoolID).Owns(owner):
		return fmt.Errorf("address %s is not held by Docker pool %s (owner %s/%s)", ip, r.PoolID, owner.ContainerID, owner.IfName)
	}
	d.log.Info("address released", logging.String("poolID", r.PoolID), logging.Stringer("address", ip))
	return nil
}
