package etcdstore

import (
	"encoding/binary"
	"hash/fnv"
	"math/bits"
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/addrspace"
)

func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	return a.Unmap(), err
}

// startAddr is where an attachment's search begins: an address of rs
// picked by hashing key (node, network, attachment, scope). Concurrent
// ADDs on many hosts then start spread over the pool instead of all racing
// for its lowest free address, and each costs one transaction as long as
// the pool is not nearly full.
func startAddr(rs addrspace.RangeSet, key string) netip.Addr {
	h := fnv.New64a()
	h.Write([]byte(key))
	sum := h.Sum64()
	r := rs[sum%uint64(len(rs))]
	off := (sum ^ sum>>33) * 0xff51afd7ed558ccd // decorrelated from the range choice
	off ^= off >> 33
	start, end := r.Start.As16(), r.End.As16()
	hi, lo := binary.BigEndian.Uint64(start[:8]), binary.BigEndian.Uint64(start[8:])
	// size-1 = end-start, as 128 bits; an offset below it fits in 64 bits
	// unless the range is larger than 2^64, where any 64-bit offset does.
	dLo, borrow := bits.Sub64(binary.BigEndian.Uint64(end[8:]), lo, 0)
	if dHi, _ := bits.Sub64(binary.BigEndian.Uint64(end[:8]), hi, borrow); dHi == 0 && dLo != ^uint64(0) {
		off %= dLo + 1
	}
	lo, carry := bits.Add64(lo, off, 0)
	binary.BigEndian.PutUint64(start[:8], hi+carry)
	binary.BigEndian.PutUint64(start[8:], lo)
	if r.Start.Is4() {
		return netip.AddrFrom16(start).Unmap()
	}
	return netip.AddrFrom16(start)
}
