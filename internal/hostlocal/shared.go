package hostlocal

import (
	"errors"
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/addrspace"
)

// AllocateShared reserves an address of rs for an owner that legitimately
// holds many addresses of one range set at once, such as the Docker IPAM
// driver (one owner per Docker pool, see internal/dockeripam): exactly
// requested when it is valid, else the next free one. It is Allocate
// without the duplicate check (for a CNI attachment a second address is a
// duplicate ADD, 102; for such an owner it is the normal case), and all
// or nothing: if the cursor cannot be moved, the reservation is undone
// before the error is returned. Release such addresses one by one with
// Rollback, never with Release, which frees everything the owner holds.
// The store's Reserve refuses an owner that cannot be recorded.
func (al *Allocator) AllocateShared(a Attachment, rangeID int, rs addrspace.RangeSet, requested netip.Addr, label string) (netip.Prefix, error) {
	var (
		ip  netip.Addr
		r   addrspace.Range
		err error
	)
	if requested.IsValid() {
		ip, r, err = al.reserveRequested(a, rs, requested.Unmap(), label)
	} else {
		ip, r, err = al.reserveNext(a, rangeID, rs, label)
	}
	if err != nil {
		return netip.Prefix{}, err
	}
	if err := al.store.SetLastReserved(rangeID, ip); err != nil {
		_, rerr := al.store.Release(a, ip)
		return netip.Prefix{}, errors.Join(err, rerr)
	}
	return netip.PrefixFrom(ip, r.Subnet.Bits()), nil
}
