package alloc

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// CheckList places what CHECK verifies, prevResult's addresses, each in
// its target. An address no target holds cannot be this attachment's
// (code 3). Without addresses, CHECK asks CheckHeld instead.
func CheckList(addrs []netip.Addr, targets []Target) ([]Target, error) {
	placed := make([]Target, len(addrs))
	for i, a := range addrs {
		t, ok, err := TargetFor(targets, a)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, cnierr.New(cnierr.CodeUnknownContainer, "address is in no selected range set", "address=%s", a)
		}
		placed[i] = t
	}
	return placed, nil
}

// Holdings is a store's side of CHECK without addresses: for each of
// scopes, the addresses the attachment holds there now (Held, for a
// Ledger), in one read of the store.
type Holdings func(scopes []Scope) (map[Scope][]netip.Addr, error)

// CheckPrev is every allocator's CHECK: prevResult's addresses, each
// placed in its target (CheckList) and verified by check; without
// addresses, CheckHeld over what held lists.
func CheckPrev(addrs []netip.Addr, targets []Target, a Attachment, held Holdings, check func(addrs []netip.Addr, placed []Target) error) error {
	placed, err := CheckList(addrs, targets)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return CheckHeld(targets, a, held)
	}
	return check(addrs, placed)
}

// ScopeReader runs fn on each of scopes' Ledgers under the store's locks,
// nil for a scope with no state (it holds nothing: CHECK creates none).
type ScopeReader func(scopes []Scope, fn func(Scope, Ledger) error) error

// CheckScopes is CheckPrev over a store that keeps a record per address:
// prevResult's addresses grouped by the scope they were placed in, each
// scope read once (Check); without addresses, what a holds (Held).
func CheckScopes(addrs []netip.Addr, targets []Target, a Attachment, read ScopeReader) error {
	held := func(scopes []Scope) (map[Scope][]netip.Addr, error) {
		out := map[Scope][]netip.Addr{}
		return out, read(scopes, func(s Scope, l Ledger) (err error) {
			if l != nil {
				out[s], err = Held(l, a)
			}
			return err
		})
	}
	return CheckPrev(addrs, targets, a, held, func(addrs []netip.Addr, placed []Target) error {
		in, scopes := map[Scope][]netip.Addr{}, []Scope{}
		for i, ip := range addrs {
			s := placed[i].Scope
			if in[s] == nil {
				scopes = append(scopes, s)
			}
			in[s] = append(in[s], ip)
		}
		return read(scopes, func(s Scope, l Ledger) error {
			if l == nil {
				return NotReserved(a, in[s][0].Unmap())
			}
			return Check(l, a, in[s])
		})
	})
}

// CheckHeld is CHECK when the runtime names no address to verify (no
// prevResult, or one without ips). The CNI spec has CHECK verify that the
// container still has what its ADD gave it, and an ADD gives one address
// per target, all or nothing; so every target must hold an address of a
// inside its ranges or its overflow pools', as CHECK with addresses
// places them (TargetFor). One address anywhere is not enough: an
// attachment that lost one family's address, or one pool's, to an
// operator's release is broken, and its runtime must hear so (code 3,
// naming the target). Both allocators answer through here, so that they
// cannot differ on it again (ipam-da-etcd once accepted any record).
func CheckHeld(targets []Target, a Attachment, held Holdings) error {
	var scopes []Scope
	for _, t := range targets {
		for _, c := range t.Chain() {
			if !slices.Contains(scopes, c.Scope) {
				scopes = append(scopes, c.Scope)
			}
		}
	}
	in, err := held(scopes)
	if err != nil {
		return err
	}
	for _, t := range targets {
		ok, err := heldIn(t, in)
		if err != nil {
			return err
		}
		if !ok {
			var where []string
			for _, c := range t.Chain() {
				where = append(where, c.Label)
			}
			return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address",
				"%s: containerID=%s ifname=%s", strings.Join(where, " or "), a.ContainerID, a.IfName)
		}
	}
	return nil
}

// heldIn reports whether one of the addresses in holds, by scope, lies in
// target t's ranges or an overflow pool's; an overflow pool's ranges are
// read only when something is held there.
func heldIn(t Target, in map[Scope][]netip.Addr) (bool, error) {
	for _, c := range t.Chain() {
		if len(in[c.Scope]) == 0 {
			continue
		}
		c, err := c.Resolved()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(in[c.Scope], c.Set.Contains) {
			return true, nil
		}
	}
	return false, nil
}
