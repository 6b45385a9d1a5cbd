package hostlocal

import "net/netip"

// AllocateShared reserves the next free address of rs for an owner that
// legitimately holds many addresses of one range set at once, such as the
// Docker IPAM driver (one owner per Docker pool, see internal/dockeripam).
// It is Allocate without the duplicate check: for a CNI attachment a
// second address is a duplicate ADD (102), for such an owner it is the
// normal case. Release such addresses one by one with Rollback, never
// with Release, which frees everything the owner holds. The store's
// Reserve refuses an owner that cannot be recorded.
func (al *Allocator) AllocateShared(a Attachment, rangeID int, rs RangeSet, label string) (netip.Prefix, error) {
	ip, r, err := al.reserveNext(a, rangeID, rs, label)
	if err != nil {
		return netip.Prefix{}, err
	}
	if err := al.store.SetLastReserved(rangeID, ip); err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(ip, r.Subnet.Bits()), nil
}

// LastAddr is the highest address of p (for IPv4, the broadcast address).
func LastAddr(p netip.Prefix) netip.Addr { return lastAddr(p.Masked()) }
