package etcdstore

import (
	"encoding/binary"
	"hash/fnv"
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
	sum = mix(sum)
	startHi, startLo := u128(r.Start)
	endHi, endLo := u128(r.End)
	// size-1 = end-start, as 128 bits; an offset below it fits in 64 bits
	// unless the range is larger than 2^64, where any 64-bit offset does.
	dHi, dLo := sub128(endHi, endLo, startHi, startLo)
	off := sum
	if dHi == 0 && dLo != ^uint64(0) {
		off = sum % (dLo + 1)
	}
	hi, lo := add128(startHi, startLo, off)
	return from128(hi, lo, r.Start.Is4())
}

// mix decorrelates the offset from the range choice.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

func u128(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func from128(hi, lo uint64, is4 bool) netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	a := netip.AddrFrom16(b)
	if is4 {
		return a.Unmap()
	}
	return a
}

func sub128(aHi, aLo, bHi, bLo uint64) (uint64, uint64) {
	lo := aLo - bLo
	borrow := uint64(0)
	if aLo < bLo {
		borrow = 1
	}
	return aHi - bHi - borrow, lo
}

func add128(hi, lo, n uint64) (uint64, uint64) {
	sum := lo + n
	if sum < lo {
		hi++
	}
	return hi, sum
}
