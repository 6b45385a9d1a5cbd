package hostlocal

import (
	"errors"
	"maps"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Allocator implements host-local's allocation semantics over a Store. It
// holds no state of its own: the caller opens (and locks) the store, makes
// its calls, and closes it.
type Allocator struct {
	store   Store
	exclude addrspace.Exclusions // see Excluding
}

// NewAllocator returns an Allocator over s.
func NewAllocator(s Store) *Allocator { return &Allocator{store: s} }

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
// no duplicate check in that case, and neither do we). Otherwise the
// attachment must not already hold an address of rs (102), and the first
// free address after the cursor is taken (100 when none, which also
// records the exhaustion for STATUS).
func (al *Allocator) Allocate(a Attachment, rangeID int, rs addrspace.RangeSet, requested netip.Addr, label string) (netip.Prefix, netip.Addr, error) {
	if !a.storable() {
		return netip.Prefix{}, netip.Addr{}, cnierr.InvalidEnv("CNI_CONTAINERID", a.ContainerID, "cannot be recorded in a reservation")
	}
	var (
		ip netip.Addr
		r  addrspace.Range
	)
	if requested.IsValid() {
		var err error
		if ip, r, err = al.reserveRequested(a, rs, requested.Unmap(), label); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	} else {
		if err := al.checkDuplicate(a, rs, label); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		var err error
		if ip, r, err = al.reserveNext(a, rangeID, rs, label); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	}
	// host-local moves the cursor on every reservation, requested ones too.
	if err := al.store.SetLastReserved(rangeID, ip); err != nil {
		// Not reported as reserved, so nobody else would free it.
		_, _ = al.store.Release(a, ip)
		return netip.Prefix{}, netip.Addr{}, err
	}
	return netip.PrefixFrom(ip, r.Subnet.Bits()), r.Gateway, nil
}

func (al *Allocator) reserveRequested(a Attachment, rs addrspace.RangeSet, ip netip.Addr, label string) (netip.Addr, addrspace.Range, error) {
	r, ok := rs.RangeFor(ip)
	if !ok || ip.Zone() != "" {
		return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address not in range set",
			"address=%s %s=%s", ip, label, rs)
	}
	if ip == r.Gateway {
		return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is the gateway",
			"address=%s %s=%s", ip, label, rs)
	}
	if !r.Usable(ip) {
		return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is the network or broadcast address",
			"address=%s %s=%s", ip, label, rs)
	}
	if al.exclude.Contains(ip) {
		return netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeAddrUnavailable, "requested address is excluded",
			"address=%s %s=%s", ip, label, rs)
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

// checkDuplicate refuses a second address from the same range set: the
// CNI spec forbids duplicate ADDs, and legacy id-only files count because
// they are the same container as far as an old host-local knew.
func (al *Allocator) checkDuplicate(a Attachment, rs addrspace.RangeSet, label string) error {
	held, err := al.heldBy(a)
	if err != nil {
		return err
	}
	for _, ip := range held {
		if rs.Contains(ip) {
			return cnierr.New(cnierr.CodeDuplicateAttach, "attachment already holds an address",
				"address=%s %s=%s containerID=%s ifname=%s", ip, label, rs, a.ContainerID, a.IfName)
		}
	}
	return nil
}

// heldBy is what a holds, plus what id-only legacy reservations of its
// container hold.
func (al *Allocator) heldBy(a Attachment) ([]netip.Addr, error) {
	held, err := al.store.ByAttachment(a)
	if err != nil || a.IfName == "" {
		return held, err
	}
	legacy, err := al.store.ByAttachment(a.Legacy())
	return append(held, legacy...), err
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

// Release frees everything a holds: the hint addresses (usually from
// prevResult) and whatever the store's index knows. Only exact owners
// match; if nothing did, id-only legacy reservations of a's container are
// released instead, as host-local's DEL does. An unknown attachment is not
// an error, because DEL must be idempotent.
func (al *Allocator) Release(a Attachment, hint []netip.Addr) ([]netip.Addr, error) {
	released, err := al.releaseOwned(a, hint)
	if err == nil && len(released) == 0 && a.IfName != "" {
		released, err = al.releaseOwned(a.Legacy(), hint)
	}
	return released, errors.Join(err, al.clearIfReleased(released))
}

func (al *Allocator) releaseOwned(a Attachment, hint []netip.Addr) ([]netip.Addr, error) {
	held, err := al.store.ByAttachment(a)
	if err != nil {
		return nil, err
	}
	var released []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, ip := range append(slices.Clone(hint), held...) {
		ip = ip.Unmap()
		if !ip.IsValid() || ip.Zone() != "" || seen[ip] {
			continue
		}
		seen[ip] = true
		ok, err := al.store.Release(a, ip)
		if err != nil {
			return released, err
		}
		if ok {
			released = append(released, ip)
		}
	}
	return released, nil
}

func (al *Allocator) clearIfReleased(released []netip.Addr) error {
	if len(released) == 0 {
		return nil
	}
	return al.store.ClearExhausted()
}

// Check verifies that every ip is reserved for a (an id-only legacy
// reservation of a's container counts). A miss is reported as code 3
// (unknown container): from CHECK's point of view the attachment the
// runtime asked about does not exist in this state directory.
func (al *Allocator) Check(a Attachment, ips []netip.Addr) error {
	for _, ip := range ips {
		ip = ip.Unmap()
		owner, ok, err := al.store.Owner(ip)
		if err != nil {
			return err
		}
		if !ok || (!a.Holds(owner) && !owner.Is(a.Legacy())) {
			return cnierr.New(cnierr.CodeUnknownContainer, "address not reserved for this attachment",
				"address=%s containerID=%s ifname=%s", ip, a.ContainerID, a.IfName)
		}
	}
	return nil
}

// GC releases every reservation whose attachment valid rejects. Legacy
// id-only reservations are passed as Attachment{ContainerID: id}; valid
// should accept them when any live attachment has that container ID. GC
// keeps going after errors and returns them joined; the cursor and lock
// files are never touched because they are not reservations.
func (al *Allocator) GC(valid func(Attachment) bool) ([]netip.Addr, error) {
	all, err := al.store.All()
	if err != nil {
		return nil, err
	}
	var released []netip.Addr
	var errs []error
	for _, ip := range slices.SortedFunc(maps.Keys(all), netip.Addr.Compare) {
		if valid(all[ip]) {
			continue
		}
		ok, err := al.store.Release(all[ip], ip)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			released = append(released, ip)
		}
	}
	errs = append(errs, al.clearIfReleased(released))
	return released, errors.Join(errs...)
}

// Rollback undoes a failed ADD: it frees exactly the addresses that ADD
// reserved (and only while a still holds them). host-local's rollback
// releases by ID and so also frees addresses a held from other range sets
// before the ADD; we must not. Exhaustion records stay: freeing what this
// ADD took returns nothing that was taken before it, and the range set
// the ADD found full is still full.
func (al *Allocator) Rollback(a Attachment, reserved []netip.Addr) error {
	_, err := al.releaseExactly(a, reserved)
	return err
}

// Free releases exactly ips, each only while a holds it: an operator's
// release of a leak, the Docker driver's ReleaseAddress. Unlike Rollback
// it returns addresses taken before, so, as after any DEL, a range set
// recorded as full may not be any more: the exhaustion records go.
func (al *Allocator) Free(a Attachment, ips []netip.Addr) ([]netip.Addr, error) {
	released, err := al.releaseExactly(a, ips)
	return released, errors.Join(err, al.clearIfReleased(released))
}

func (al *Allocator) releaseExactly(a Attachment, ips []netip.Addr) ([]netip.Addr, error) {
	var released []netip.Addr
	var errs []error
	for _, ip := range ips {
		ok, err := al.store.Release(a, ip.Unmap())
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			released = append(released, ip.Unmap())
		}
	}
	return released, errors.Join(errs...)
}

// HoldsAny reports whether a (or an id-only legacy reservation of its
// container) holds any address here, whatever its range: host-local's
// CHECK when the runtime gives no addresses to verify.
func (al *Allocator) HoldsAny(a Attachment) (bool, error) {
	held, err := al.heldBy(a)
	return len(held) > 0, err
}
