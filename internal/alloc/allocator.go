package alloc

import (
	"errors"
	"hash/fnv"
	"math/big"
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Allocator implements host-local's allocation semantics over a Store. It
// holds no state of its own: the caller opens (and locks) the store, makes
// its calls, and closes it.
type Allocator struct {
	store   Store
	ledger  Ledger               // store, when it is one
	exclude addrspace.Exclusions // see Excluding
}

// New returns an Allocator over s.
func New(s Store) *Allocator {
	l, _ := s.(Ledger)
	return &Allocator{store: s, ledger: l}
}

// Excluding returns an allocator that never hands out an address of ex:
// the iterator skips its runs, and a request for one is code 101.
func (al *Allocator) Excluding(ex addrspace.Exclusions) *Allocator {
	c := *al
	c.exclude = ex
	return &c
}

// Allocate reserves one address of rs for a and returns it with the
// subnet's prefix length and the range's gateway. rangeID names rs's
// round-robin cursor (host-local's index of rs in "ranges"); label names
// rs in error details (e.g. "ranges[1]" or a pool name).
//
// With requested valid, exactly that address is reserved (host-local does
// no duplicate check in that case, and neither does a Ledger's; a store
// that is no Ledger reports one from its claim whatever was requested,
// see Store). Otherwise the attachment must not already hold an address
// of rs (102), and the first free address after the cursor is taken (100
// when none, which also records the exhaustion for STATUS).
func (al *Allocator) Allocate(a Attachment, rangeID int, rs addrspace.RangeSet, requested netip.Addr, label string) (netip.Prefix, netip.Addr, error) {
	if !a.Recordable() {
		return netip.Prefix{}, netip.Addr{}, cnierr.InvalidEnv("CNI_CONTAINERID", a.ContainerID, "cannot be recorded in a reservation")
	}
	if !requested.IsValid() {
		if err := al.checkDuplicate(a, rs, label); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	}
	p, gw, err := al.reserve(a, rangeID, rs, requested, label)
	return p, gw, judgeAttached(err, a, label)
}

// AllocateShared reserves an address of rs for an owner that legitimately
// owns many addresses of one range set at once, such as the Docker IPAM
// driver (one owner per Docker pool, see internal/dockeripam): exactly
// requested when it is valid, else the next free one. It is Allocate
// without the duplicate check (for a CNI attachment a second address is a
// duplicate ADD, 102; for such an owner it is the normal case), and all
// or nothing: if the cursor cannot be moved, the reservation is undone
// before the error is returned. Release such addresses one by one with
// Rollback, never with Release, which frees everything the owner owns.
// The store's Reserve refuses an owner that cannot be recorded.
func (al *Allocator) AllocateShared(a Attachment, rangeID int, rs addrspace.RangeSet, requested netip.Addr, label string) (netip.Prefix, error) {
	p, _, err := al.reserve(a, rangeID, rs, requested, label)
	return p, err
}

// reserve reserves requested, or the next free address, and moves the
// cursor past it.
func (al *Allocator) reserve(a Attachment, rangeID int, rs addrspace.RangeSet, requested netip.Addr, label string) (netip.Prefix, netip.Addr, error) {
	var ip netip.Addr
	var r addrspace.Range
	var err error
	if requested.IsValid() {
		ip, r, err = al.reserveRequested(a, rs, requested.Unmap(), label)
	} else {
		ip, r, err = al.reserveNext(a, rangeID, rs, label)
	}
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	// Not reported as reserved, so nobody else would free it.
	if err := al.moveCursor(a, rangeID, ip); err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	return netip.PrefixFrom(ip, r.Subnet.Bits()), r.Gateway, nil
}

// moveCursor: host-local moves the cursor on every reservation, requested
// ones too. If it cannot, the reservation is undone, so that the ADD
// fails whole.
func (al *Allocator) moveCursor(a Attachment, rangeID int, ip netip.Addr) error {
	if al.ledger == nil {
		return nil
	}
	err := al.ledger.SetLastReserved(rangeID, ip)
	if err == nil {
		return nil
	}
	if _, rerr := al.ledger.Release(a, ip); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

func (al *Allocator) reserveRequested(a Attachment, rs addrspace.RangeSet, ip netip.Addr, label string) (netip.Addr, addrspace.Range, error) {
	r, err := al.usable(rs, ip, label)
	if err != nil {
		return netip.Addr{}, addrspace.Range{}, err
	}
	ok, err := al.store.Reserve(a, ip)
	if err != nil {
		return netip.Addr{}, addrspace.Range{}, err
	}
	if !ok {
		return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is already reserved",
			"address=%s %s=%s", ip, label, rs)
	}
	return ip, r, nil
}

// usable is the range of ip in rs when ip may be handed out at all: in
// the range set, neither gateway nor network or broadcast address, not
// excluded. A requested address and a sticky key's held one pass the
// same checks (101 otherwise).
func (al *Allocator) usable(rs addrspace.RangeSet, ip netip.Addr, label string) (addrspace.Range, error) {
	r, ok := rs.RangeFor(ip)
	if !ok || ip.Zone() != "" {
		return addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address not in range set",
			"address=%s %s=%s", ip, label, rs)
	}
	if ip == r.Gateway {
		return addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is the gateway",
			"address=%s %s=%s", ip, label, rs)
	}
	if !r.Usable(ip) {
		return addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is the network or broadcast address",
			"address=%s %s=%s", ip, label, rs)
	}
	if al.exclude.Contains(ip) {
		return addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is excluded",
			"address=%s %s=%s", ip, label, rs)
	}
	return r, nil
}

// checkDuplicate refuses a second address from the same range set: the
// CNI spec forbids duplicate ADDs, and legacy id-only files count because
// they are the same container as far as an old host-local knew. A store
// that is no Ledger reports it from Reserve, atomically with the claim.
func (al *Allocator) checkDuplicate(a Attachment, rs addrspace.RangeSet, label string) error {
	if al.ledger == nil {
		return nil
	}
	held, err := ownedBy(al.ledger, a)
	if err != nil {
		return err
	}
	for _, ip := range held {
		if rs.Contains(ip) {
			return attachedErr(ip, a, label+"="+rs.String())
		}
	}
	return nil
}

// AttachedFound is what shows that an attachment already holds Addr in a
// target: a Store's Reserve answers it (see Store), checkDuplicate and
// AllocateOverflow find it.
type AttachedFound struct{ Addr netip.Addr }

func (*AttachedFound) Error() string { return "the attachment already holds an address" }

// judgeAttached is err with an *AttachedFound answered as 102, for a in
// the target where names.
func judgeAttached(err error, a Attachment, where string) error {
	if f, ok := errors.AsType[*AttachedFound](err); ok {
		return attachedErr(f.Addr, a, where)
	}
	return err
}

// attachedErr is the 102 of a, which holds addr in the target where names.
func attachedErr(addr netip.Addr, a Attachment, where string) error {
	return cnierr.New(cnierr.CodeDuplicateAttach, "attachment already holds an address",
		"address=%s %s containerID=%s ifname=%s", addr, where, a.ContainerID, a.IfName)
}

func (al *Allocator) reserveNext(a Attachment, rangeID int, rs addrspace.RangeSet, label string) (netip.Addr, addrspace.Range, error) {
	last, err := al.store.LastReserved(rangeID)
	if err != nil {
		return netip.Addr{}, addrspace.Range{}, err
	}
	it := rs.IterExcluding(last, al.exclude)
	for ip, r, ok := it.Next(); ok; ip, r, ok = it.Next() {
		got, err := al.store.Reserve(a, ip)
		if err != nil {
			return netip.Addr{}, addrspace.Range{}, err
		}
		if got {
			return ip, r, nil
		}
	}
	if err := al.store.MarkExhausted(rangeID); err != nil {
		return netip.Addr{}, addrspace.Range{}, err
	}
	return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodePoolExhausted, "no addresses available",
		"%s=%s", label, rs)
}

// SpreadStart is where the search of rs begins in a store that keeps no
// round-robin cursor (etcd, where a cursor would be the one key every ADD
// of the pool writes): an address of rs picked by hashing who asks (node,
// network, attachment, scope). Concurrent ADDs on many hosts then start
// spread over the pool instead of all racing for its lowest free address,
// and each costs one claim as long as the pool is not nearly full.
func SpreadStart(rs addrspace.RangeSet, node string, a Attachment, s Scope) netip.Addr {
	h := fnv.New64a()
	h.Write([]byte(node + "\x00" + a.Network + "\x00" + a.ContainerID + "\x00" + a.IfName + "\x00" + s.Path()))
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
	ip := netip.AddrFrom16([16]byte(lo.FillBytes(make([]byte, 16))))
	if r.Start.Is4() {
		return ip.Unmap()
	}
	return ip
}
