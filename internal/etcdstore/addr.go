package etcdstore

import (
	"hash/fnv"
	"math/big"
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
	// start + off mod the range's size, in 128 bits (a range may hold
	// more than 2^64 addresses).
	start, end := r.Start.As16(), r.End.As16()
	lo, hi := new(big.Int).SetBytes(start[:]), new(big.Int).SetBytes(end[:])
	size := hi.Add(hi.Sub(hi, lo), big.NewInt(1))
	lo.Add(lo, size.Mod(new(big.Int).SetUint64(off), size))
	a := netip.AddrFrom16([16]byte(lo.FillBytes(make([]byte, 16))))
	if r.Start.Is4() {
		return a.Unmap()
	}
	return a
}
