package alloctest

import (
	"errors"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
)

// Store is what ipam-da-pools' state directories are: a Lister that
// keeps holds.
type Store interface {
	alloc.Lister
	alloc.HoldStore
}

// Engine is the Subject of a Store driven by the engine's functions, as
// ipam-da-pools drives its state directories: open gives the store for
// one command and the function that ends it (a disk store's Close). It
// is Crashable: a crashed command's store stops writing, and is then
// ended as usual (a disk store's index, stamped on Close, then describes
// exactly what was written; a kill -9's rebuild is the disk store's own
// test).
type Engine struct {
	open  func() (Store, func() error, error)
	crash *crashPlan
}

// NewEngine is the Engine over the stores open gives.
func NewEngine(open func() (Store, func() error, error)) Engine {
	return Engine{open: open, crash: &crashPlan{}}
}

// Mem is the Engine over one MemStore.
func Mem() Engine {
	m := NewMemStore()
	return NewEngine(func() (Store, func() error, error) { return m, func() error { return nil }, nil })
}

func (e Engine) with(f func(Store) error) error {
	l, done, err := e.open()
	if err != nil {
		return err
	}
	if e.crash.armed {
		e.crash.armed = false
		l = crashStore{Store: l, plan: e.crash}
	}
	return errors.Join(f(l), done())
}

// Add implements Subject: with a key, the store must be a HoldStore.
func (e Engine) Add(c Call, targets []alloc.Target) ([]netip.Prefix, error) {
	var out []netip.Prefix
	err := e.with(func(l Store) error {
		var u alloc.Undo
		locate := func(t alloc.Target) (alloc.Presence, error) { return alloc.LocateIn(l, c.Att, t, c.Key, c.Now) }
		allocate := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
			if c.Key != "" {
				return alloc.AllocateKeyed(l, c.Att, t, alloc.Keyed{Key: c.Key, HoldFor: c.HoldFor, Migration: c.Migration}, c.Now, &u)
			}
			p, gw, err := t.Allocator(l).Allocate(c.Att, t.RangeID, t.Set, t.Requested, t.Label)
			if err == nil {
				u.Reserved(l, p.Addr())
			}
			return p, gw, err
		}
		ts, counts := l.(alloc.TenantStore)
		if counts && c.Quota != nil {
			ts.ForTenant(c.Quota.Tenant)
			defer ts.ForTenant("")
		}
		inUse := func() (int, error) { return ts.TenantAddrs(c.Quota.Tenant) }
		for _, t := range targets {
			_, err := alloc.QuotaGate(c.Quota, t, c.Key, c.Migration, locate, inUse)
			var p netip.Prefix
			if err == nil {
				p, _, _, err = alloc.AllocateOverflow(t, c.Att, locate, allocate)
			}
			if err != nil {
				out = nil
				return errors.Join(err, u.Run(c.Att))
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Del implements Subject: a key's reservations become holds first.
func (e Engine) Del(c Call, hints []netip.Addr) error {
	return e.with(func(l Store) error {
		if _, err := alloc.HoldOnDel(l, c.Att, c.Key, c.Now); err != nil {
			return err
		}
		_, err := alloc.Release(l, c.Att, hints)
		return err
	})
}

// Check implements Subject; without addresses, CheckHeld over
// CheckTargets (one store holds every scope's reservations).
func (e Engine) Check(c Call, ips []netip.Addr) error {
	return e.with(func(l Store) error {
		if len(ips) > 0 {
			return alloc.Check(l, c.Att, ips)
		}
		return alloc.CheckHeld(CheckTargets(), c.Att, func(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
			held, err := alloc.Held(l, c.Att)
			in := map[alloc.Scope][]netip.Addr{}
			for _, s := range scopes {
				in[s] = held
			}
			return in, err
		})
	})
}

// GC implements Subject: holds first, so that a gone container's keyed
// reservation becomes a hold rather than being freed.
func (e Engine) GC(live []alloc.Attachment, now time.Time) error {
	return e.with(func(l Store) error {
		keep := alloc.NewKeepSet("net", live).Keeps
		if _, _, err := alloc.GCHolds(l, keep, now); err != nil {
			return err
		}
		_, err := alloc.GC(l, keep)
		return err
	})
}

// ReleaseKey implements Subject.
func (e Engine) ReleaseKey(key, ifname string, _ time.Time) error {
	return e.with(func(l Store) error {
		_, _, err := alloc.OperatorRelease(l, alloc.ReleaseRequest{Key: key, IfName: ifname, Where: "the contract's scope"}, time.Now())
		return err
	})
}

// ReleaseAddr implements Subject.
func (e Engine) ReleaseAddr(ip netip.Addr, now time.Time) error {
	return e.with(func(l Store) error {
		_, _, err := alloc.OperatorRelease(l, alloc.ReleaseRequest{Addr: ip, Where: "the contract's scope"}, now)
		return err
	})
}
