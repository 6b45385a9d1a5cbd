package alloc

import (
	"errors"
	"net/netip"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// LockedPool is the store of one pool that an ADD locks (the disk
// store): a ledger of holds and of its chain's spill records whose
// cursor an undone ADD puts back.
type LockedPool interface {
	HoldStore
	SpillRecorder
	CursorKeeper
}

// Locked is the pools a store locked for a try of a LockedAdd, or for
// LockedDel.
type Locked interface {
	// Pool is scope s's store, nil when the try did not lock it.
	Pool(s Scope) LockedPool
	// TenantAddrs counts tenant's addresses in scopes; exact is false
	// when some scope was counted without its lock.
	TenantAddrs(tenant string, scopes []Scope) (n int, exact bool, err error)
}

// Add is the ADD of every store, all or nothing: per target, the quota's
// gate (QuotaGate), then an address along the target's chain
// (AllocateOverflow); when a target fails, Undo removes what the ADD
// reserved. How a store looks at a chain and takes an address in it is
// its own (Steps): the pools a LockedAdd try locked, etcd's claim.
type Add struct {
	Targets []Target
	Att     Attachment
	Quota   *pool.Quota // nil: none
	Keyed   Keyed       // Key "": none
	Log     *logging.Logger
	// Steps are target t's look at its chain and its allocation.
	Steps func(t Target) (locate func(Target) (Presence, error), allocate func(Target) (netip.Prefix, netip.Addr, error))
	// InUse counts the tenant's addresses, only where the gate needs it.
	InUse func() (int, error)
	Undo  func() error
}

// Run gives each target its address, in order.
func (a Add) Run() ([]*current.IPConfig, error) {
	var ips []*current.IPConfig
	for _, t := range a.Targets {
		locate, allocate := a.Steps(t)
		err := QuotaGate(a.Quota, t, a.Keyed.Key, a.Keyed.Migration, locate, a.InUse)
		var addr netip.Prefix
		var gw netip.Addr
		if err == nil {
			addr, gw, t, err = AllocateOverflow(t, a.Att, locate, allocate)
		}
		if err != nil {
			// The ADD's own error is what the runtime must see.
			if uerr := a.Undo(); uerr != nil {
				a.Log.Error("undoing the failed ADD failed; its DEL or GC will remove the rest", logging.Error(uerr))
			}
			return nil, err
		}
		a.Log.Debug("allocated", logging.String("target", t.Label), logging.Stringer("address", addr))
		ips = append(ips, IPConfig(addr, gw))
	}
	return ips, nil
}

// LockedAdd is the Add of a store whose pools are locked for it (Steps,
// InUse and Undo are its own).
type LockedAdd struct {
	Add
	Now time.Time
}

// Run decides which pools each try locks: with the heads of the chains
// alone where HeadsSuffice allows it, the quota's count needing no other
// pool's lock since the tenant's lets the store read them without; what
// needs the whole chain (ErrWholeChain) runs again with every pool of
// the chains; a count at the quota that is not exact (ErrWholeCount)
// runs again with every pool the quota counts in too, since only such a
// count may refuse. lock locks scopes for tenant ("" none), and done
// unlocks them after the try.
func (r LockedAdd) Run(lock func(tenant string, scopes []Scope) (st Locked, done func(), err error)) ([]*current.IPConfig, error) {
	ips, err := r.try(lock, HeadsSuffice(r.Targets, r.Keyed.Key), false)
	if errors.Is(err, ErrWholeChain) {
		ips, err = r.try(lock, false, false)
	}
	if errors.Is(err, ErrWholeCount) {
		ips, err = r.try(lock, false, true)
	}
	return ips, err
}

// try runs the ADD once, with the heads alone or every pool of the
// chains locked, and the pools the quota counts in too when lockCounted.
func (r LockedAdd) try(lock func(string, []Scope) (Locked, func(), error), headsOnly, lockCounted bool) ([]*current.IPConfig, error) {
	var scopes []Scope
	for _, t := range r.Targets {
		for i, c := range t.Chain() {
			if i == 0 || !headsOnly {
				scopes = append(scopes, c.Scope)
			}
		}
	}
	counted := CountScopes(r.Quota, r.Targets)
	if lockCounted {
		scopes = append(scopes, counted...)
	}
	tenant := ""
	if r.Quota != nil {
		tenant = r.Quota.Tenant
	}
	st, done, err := lock(tenant, scopes)
	if err != nil {
		return nil, err
	}
	defer done()
	var u Undo
	have := func(s Scope) bool { return st.Pool(s) != nil }
	locateIn := func(t Target) (Presence, error) { return LocateIn(st.Pool(t.Scope), r.Att, t, r.Keyed.Key, r.Now) }
	allocateIn := func(t Target) (netip.Prefix, netip.Addr, error) {
		d := st.Pool(t.Scope)
		if err := u.Cursor(d, t.RangeID); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		if r.Keyed.Key != "" {
			return AllocateKeyed(d, r.Att, t, r.Keyed, r.Now, &u)
		}
		addr, gw, err := t.Allocator(d).Allocate(r.Att, t.RangeID, t.Set, t.Requested, t.Label)
		if err == nil {
			u.Reserved(d, addr.Addr())
		}
		return addr, gw, err
	}
	inUse := func() (int, error) {
		n, exact, err := st.TenantAddrs(tenant, counted)
		if err != nil {
			return n, err
		}
		return PartialCount(r.Quota, n, exact)
	}
	steps := func(t Target) (func(Target) (Presence, error), func(Target) (netip.Prefix, netip.Addr, error)) {
		return Spilling(t, r.Att, st.Pool(t.Scope), have, locateIn, allocateIn)
	}
	r.Steps, r.InUse, r.Undo = steps, inUse, func() error { return u.Run(r.Att) }
	return r.Add.Run()
}
