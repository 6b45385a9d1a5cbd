package alloc

import (
	"errors"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// ownedBy is what a owns, plus what id-only legacy reservations of its
// container hold.
func ownedBy(l Ledger, a Attachment) ([]netip.Addr, error) {
	held, err := l.ByAttachment(a)
	if err != nil || a.IfName == "" {
		return held, err
	}
	legacy, err := l.ByAttachment(a.Legacy())
	return append(held, legacy...), err
}

// Release frees everything a owns in l: the hint addresses (usually from
// prevResult) and whatever the ledger's index knows. Only exact owners
// match; if nothing did, id-only legacy reservations of a's container are
// released instead, as host-local's DEL does. An unknown attachment is not
// an error, because DEL must be idempotent.
func Release(l Ledger, a Attachment, hint []netip.Addr) ([]netip.Addr, error) {
	released, err := releaseOwned(l, a, hint)
	if err == nil && len(released) == 0 && a.IfName != "" {
		released, err = releaseOwned(l, a.Legacy(), hint)
	}
	return released, errors.Join(err, clearIfReleased(l, released))
}

func releaseOwned(l Ledger, a Attachment, hint []netip.Addr) ([]netip.Addr, error) {
	held, err := l.ByAttachment(a)
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
		ok, err := l.Release(a, ip)
		if err != nil {
			return released, err
		}
		if ok {
			released = append(released, ip)
		}
	}
	return released, nil
}

func clearIfReleased(l Ledger, released []netip.Addr) error {
	if len(released) == 0 {
		return nil
	}
	return l.ClearExhausted()
}

// Check verifies that every ip is reserved for a (an id-only legacy
// reservation of a's container counts, and so does a share of a sticky
// key's address as its migration target, in a ledger that keeps holds).
// A miss is NotReserved.
func Check(l Ledger, a Attachment, ips []netip.Addr) error {
	var shared []HoldRecord
	for _, ip := range ips {
		ip = ip.Unmap()
		owner, ok, err := l.Owner(ip)
		if err != nil {
			return err
		}
		if hr, holds := l.(HoldReader); ok && holds && !a.Owns(owner) && shared == nil {
			if shared, err = SecondsOf(hr, a); err != nil {
				return err
			}
		}
		var second Attachment
		if slices.ContainsFunc(shared, func(e HoldRecord) bool { return e.Addr == ip }) {
			second = a
		}
		if !ok || !a.Checks("", owner, "", second, "") {
			return NotReserved(a, ip)
		}
	}
	return nil
}

// NotReserved is CHECK's answer for an address that is not a's, from any
// store: code 3 (unknown container), since from CHECK's point of view the
// attachment the runtime asked about does not exist there.
func NotReserved(a Attachment, ip netip.Addr) error {
	return cnierr.New(cnierr.CodeUnknownContainer, "address not reserved for this attachment",
		"address=%s containerID=%s ifname=%s", ip, a.ContainerID, a.IfName)
}

// Held lists what a holds in l, whatever its range: its reservations,
// those of id-only legacy reservations of its container, and, in a ledger
// that keeps holds, the addresses it shares as a migration target. It is
// a store's answer to CHECK without addresses (CheckHeld has the rule).
func Held(l Ledger, a Attachment) ([]netip.Addr, error) {
	held, err := ownedBy(l, a)
	if hr, holds := l.(HoldReader); err == nil && holds {
		var shared []HoldRecord
		shared, err = SecondsOf(hr, a)
		for _, e := range shared {
			held = append(held, e.Addr)
		}
	}
	return held, err
}

// Rollback undoes a failed ADD: it frees exactly the addresses that ADD
// reserved (and only while a still owns them). host-local's rollback
// releases by ID and so also frees addresses a held from other range sets
// before the ADD; we must not. Exhaustion records stay: freeing what this
// ADD took returns nothing that was taken before it, and the range set
// the ADD found full is still full.
func Rollback(l Ledger, a Attachment, reserved []netip.Addr) error {
	_, err := releaseExactly(l, a, reserved)
	return err
}

// Free releases exactly ips, each only while a owns it: an operator's
// release of a leak, the Docker driver's ReleaseAddress. Unlike Rollback
// it returns addresses taken before, so, as after any DEL, a range set
// recorded as full may not be any more: the exhaustion records go.
func Free(l Ledger, a Attachment, ips []netip.Addr) ([]netip.Addr, error) {
	released, err := releaseExactly(l, a, ips)
	return released, errors.Join(err, clearIfReleased(l, released))
}

func releaseExactly(l Ledger, a Attachment, ips []netip.Addr) ([]netip.Addr, error) {
	var released []netip.Addr
	var errs []error
	for _, ip := range ips {
		ok, err := l.Release(a, ip.Unmap())
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			released = append(released, ip.Unmap())
		}
	}
	return released, errors.Join(errs...)
}
