package alloc

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// The sticky state machine over a HoldStore (the rules are in sticky.go).
// Every transition is two writes, a record and a reservation, in the
// order that makes a crash between them read back, through judgeHold, as
// the state before or the state after, never as an address both held and
// handed out. A record left behind its reservation is rewritten as judged
// by the next DEL of the container it names, GC or fsck --repair
// (SettleHold, holddel.go).

// Keyed is an attachment's sticky key as an ADD or DEL sees it: the key,
// and the holdFor of the configuration.
type Keyed struct {
	Key     string
	HoldFor time.Duration
	// Migration is the ADD's migration name, "" for none: read for a VM's
	// key alone (ipamconf.StickyKey).
	Migration string
}

// holdAction is what an ADD does with its key's hold (decideHold).
type holdAction int

const (
	allocateAnew holdAction = iota // no hold: allocate, then record
	takeItOver                     // the held address, to this attachment
	endItFirst                     // free the hold, then allocate anew
	ownAlready                     // this container has it: a duplicate ADD (102)
	addSecond                      // a migration target: the live owner's address, shared
)

// decideHold applies the rules to h, the hold of key for attachment a
// (whose container is on node, "" where holds are one node's) in target
// t, nil when there is none; mig is the ADD's migration name. A held address is taken over only when it passes every
// check a requested address must (range, gateway, network and broadcast,
// exclusion): a hold whose address the configuration has since dropped or
// excluded is freed and a new address allocated, as is an expired one.
// 105 for a live owner, 101 for a request of another address. A
// migration target (mig set) shares the address of the one live owner
// whose migration name differs, which must pass the same checks; it
// never allocates (107).
func decideHold(al *Allocator, h *Hold, key string, a Attachment, node string, t Target, mig string, now time.Time) (holdAction, netip.Addr, addrspace.Range, error) {
	if h == nil {
		return allocateAnew, netip.Addr{}, addrspace.Range{}, NoMigrationSource(key, mig, t)
	}
	if !h.For(key, a.IfName) {
		return 0, netip.Addr{}, addrspace.Range{}, StickyCollision(key, a.IfName, *h)
	}
	if h.SecondIs(node, a.ContainerID) {
		return 0, netip.Addr{}, addrspace.Range{}, cnierr.New(cnierr.CodeDuplicateAttach, "attachment already shares its sticky key's address",
			"address=%s key=%q containerID=%s ifname=%s: it is the key's migration target", h.Address, key, a.ContainerID, a.IfName)
	}
	if migrating(h, node, a, mig, now) {
		addr, err := StickyAddr(&Hold{Key: h.Key, Address: h.Address}, node, a.ContainerID, t.Requested, now)
		var r addrspace.Range
		if err == nil {
			r, err = al.usable(t.Set, addr, t.Label)
		}
		return addSecond, addr, r, err
	}
	addr, err := StickyAddr(h, node, a.ContainerID, t.Requested, now)
	switch {
	case err != nil:
		if h.Second != "" && cnierr.Code(err) == cnierr.CodeStickyHeld {
			err = cnierr.New(cnierr.CodeStickyHeld, fmt.Sprintf("sticky key %s is held by two live attachments (a migration)", key),
				"key=%q address=%s containerID=%s and %s ifname=%s: a third attachment waits for one of them to be deleted; retry", key, h.Address, h.owner(), h.second(), h.IfName)
		}
		return 0, netip.Addr{}, addrspace.Range{}, err
	case !addr.IsValid():
		return endItFirst, netip.Addr{}, addrspace.Range{}, NoMigrationSource(key, mig, t)
	case !h.Held():
		return ownAlready, addr, addrspace.Range{}, nil
	}
	r, err := al.usable(t.Set, addr, t.Label)
	if err != nil {
		return endItFirst, addr, addrspace.Range{}, NoMigrationSource(key, mig, t)
	}
	return takeItOver, addr, r, nil
}

// migrating reports an ADD that becomes h's second owner: h reserved by
// one live attachment, another, with no migration target yet, and a
// migration name that is not the owner's (the source of a second
// migration still carries the first one's).
func migrating(h *Hold, node string, a Attachment, mig string, now time.Time) bool {
	return mig != "" && !h.Held() && !h.OwnedBy(node, a.ContainerID) && h.Second == "" && mig != h.Migration && !h.Expired(now)
}

// NoMigrationSource refuses a migration target whose key holds no address it can
// share: a target never allocates (the VM would change its address); nil
// for an ADD that is no target.
func NoMigrationSource(key, mig string, t Target) error {
	if mig == "" {
		return nil
	}
	return cnierr.New(cnierr.CodeNoMigrationSource, "migration target's sticky key holds no address",
		"key=%q migration=%q %s: the source's address is not held here (another node's, with a node-local allocator?)", key, mig, t.Label)
}

// AllocateKeyed is one target's ADD in a HoldStore for an attachment with
// sticky key k (decideHold decides): the key's held address again, or a
// fresh allocation whose record is written after the reservation. What it
// did goes into u for the ADD's rollback.
func AllocateKeyed(hs HoldStore, a Attachment, t Target, k Keyed, now time.Time, u *Undo) (netip.Prefix, netip.Addr, error) {
	id := HoldID(k.Key, a.IfName, t.RangeID)
	e, err := LookupHold(hs, id)
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	var h *Hold
	if e != nil && e.Stale == "" {
		h = &e.Hold
	}
	al := t.Allocator(hs)
	action, addr, r, err := decideHold(al, h, k.Key, a, "", t, k.Migration, now)
	switch {
	case err != nil:
		return netip.Prefix{}, netip.Addr{}, err
	case action == addSecond:
		return shareAddr(hs, *e, r, a, k.Migration, u)
	case action == takeItOver:
		if err := takeOver(hs, *e, a, k); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		u.tookOver(hs, *e)
		return netip.PrefixFrom(addr, r.Subnet.Bits()), r.Gateway, nil
	case action == ownAlready:
		return al.Allocate(a, t.RangeID, t.Set, t.Requested, t.Label)
	case action == endItFirst:
		if _, err := EndHold(hs, *e); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	}
	p, gw, err := al.Allocate(a, t.RangeID, t.Set, t.Requested, t.Label)
	if err != nil {
		return p, gw, err
	}
	u.Reserved(hs, p.Addr())
	if err := hs.WriteHold(id, KeyRecord(nil, a, "", p.Addr().String(), k)); err != nil {
		return p, gw, err
	}
	u.recorded(hs, id)
	return p, gw, nil
}

// shareAddr makes a, a migration target, e's second owner: one write of
// the record, the reservation staying its owner's, so that a crash leaves
// either one owner or two, never a third or none; r is the range of e's
// address, which decideHold found the target's configuration allows.
func shareAddr(hs HoldStore, e HoldRecord, r addrspace.Range, a Attachment, mig string, u *Undo) (netip.Prefix, netip.Addr, error) {
	if err := hs.WriteHold(e.ID, e.SharedWith("", a.ContainerID, mig)); err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	u.seconded(hs, e.ID)
	return netip.PrefixFrom(e.Addr, r.Subnet.Bits()), r.Gateway, nil
}

// HoldClaimer is a Store whose Reserve claims a keyed attachment's hold
// in the same transaction as the address (etcd: one round trip for a new
// key), and so meets the key's hold only there: Reserve then returns a
// *HoldFound, the search ends, and AllocateClaimed applies the rules
// through these calls before searching again. A claim that takes the
// found hold over (TakeOver) or shares it (Share) is no new address for
// the tenant, whose address it is already (as in QuotaGate): the store
// neither checks the quota for it nor records it.
type HoldClaimer interface {
	Store
	// Found reads what the engine needs of the hold f found: nil when it
	// pins nothing (the store has dropped it). The store keeps it for
	// TakeOver and FreeFound.
	Found(f *HoldFound) (*Hold, error)
	// KeyHold reads the key's hold, a *HoldFound as a claim meets it: for
	// a migration target, which never claims a new address (107).
	KeyHold() error
	// TakeOver makes the next Reserve take the found hold over, exactly
	// as found.
	TakeOver()
	// FreeFound frees the found hold and its address, exactly as found.
	FreeFound() error
	// Share makes a the found hold's second (migration) owner, for
	// migration mig, while the hold and its owner's claim are exactly as
	// found: false, nothing written, when they changed; an *AttachedFound
	// when a holds an address of the range set already.
	Share(a Attachment, mig string) (bool, error)
}

// HoldFound is what a keyed claim met (Reserve's error) or KeyHold read:
// Ref is the store's own reference to the hold, nil when there is none
// (the hold a claim was taking over changed or went).
type HoldFound struct{ Ref any }

func (*HoldFound) Error() string { return "the sticky key has a hold" }

// maxHoldChanges bounds how often a hold may change under one ADD.
const maxHoldChanges = 8

// AllocateClaimed is one target's ADD in a HoldClaimer for attachment a,
// on node, with sticky key key: the search as usual, and each hold it meets decided by the
// same rules as AllocateKeyed's, until a claim succeeds. A hold that keeps
// changing under the ADD is code 11.
func AllocateClaimed(s HoldClaimer, a Attachment, node string, t Target, key, mig string, now time.Time) (netip.Prefix, netip.Addr, error) {
	al := t.Allocator(s)
	requested, took := t.Requested, false
	for try := 0; ; try++ {
		p, gw, err := netip.Prefix{}, netip.Addr{}, error(nil)
		if mig != "" && !took { // a target claims no new address: it meets the key's hold
			err = s.KeyHold()
		} else {
			p, gw, err = al.Allocate(a, t.RangeID, t.Set, requested, t.Label)
		}
		var f *HoldFound
		if !errors.As(err, &f) {
			return p, gw, err
		}
		if try == maxHoldChanges {
			return netip.Prefix{}, netip.Addr{}, cnierr.New(cnierr.CodeTryAgainLater, "the sticky key's hold kept changing", "%s", t.Label)
		}
		requested, took = t.Requested, false
		h, err := s.Found(f)
		if err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		action, addr, r, err := decideHold(al, h, key, a, node, t, mig, now)
		switch {
		case err != nil:
			return netip.Prefix{}, netip.Addr{}, err
		case action == addSecond:
			ok, err := s.Share(a, mig)
			if err != nil {
				return netip.Prefix{}, netip.Addr{}, judgeAttached(err, a, t.Label)
			}
			if ok {
				return netip.PrefixFrom(addr, r.Subnet.Bits()), r.Gateway, nil
			}
		case action == endItFirst:
			if err := s.FreeFound(); err != nil {
				return netip.Prefix{}, netip.Addr{}, err
			}
		case action == takeItOver, action == ownAlready:
			// ownAlready: the claim's own duplicate check answers (102).
			s.TakeOver()
			requested, took = addr, true
		}
	}
}

// takeOver gives e's held address to a, whose ADD has sticky key k: the
// record first (KeyRecord), then the reservation. A crash between leaves
// the address reserved for the hold, which judgeHold reads as still held.
func takeOver(hs HoldStore, e HoldRecord, a Attachment, k Keyed) error {
	if err := hs.WriteHold(e.ID, KeyRecord(&e.Hold, a, "", e.Address, k)); err != nil {
		return err
	}
	return hs.Reassign(e.Addr, HoldOwner(e.ID), a)
}

// KeyRecord is the record of a's reservation (its container on node) of
// addr for its sticky key k: a new one when found is nil, else found,
// the key's hold, taken over: its last owner and expiry kept (a crash
// before the reservation is written reads as the hold still), a
// migration target it named dropped.
func KeyRecord(found *Hold, a Attachment, node, addr string, k Keyed) Hold {
	h := Hold{Key: k.Key, IfName: a.IfName, Address: addr}
	if found != nil {
		h = found.WithoutSecond()
	}
	h.Node, h.Owner, h.Network, h.HoldFor, h.Migration = node, a.ContainerID, a.Network, k.HoldFor.String(), k.Migration
	return h
}

// giveBack undoes takeOver after a failed ADD: the reservation first,
// then the record (the order takeOver's crash case already covers).
func giveBack(hs HoldStore, e HoldRecord, a Attachment) error {
	owner, ok, err := hs.Owner(e.Addr)
	if err != nil || !ok || !a.Owns(owner) {
		return err
	}
	if err := hs.Reassign(e.Addr, owner, HoldOwner(e.ID)); err != nil {
		return err
	}
	return hs.WriteHold(e.ID, *UndoHold(&e.Hold, false))
}

// leaveOwner writes after, e's record once its owner's reservation is
// released, as a hold or to its migration target alone. To a hold: the
// record first, then the reservation, so that a crash between leaves the
// reservation its owner's, which judgeHold reads as still reserved by the
// record's LastOwner (the DEL's retry finishes it). To the target: the
// reservation first, then the record, so that a crash between leaves the
// address reserved by the record's Second, which judgeHold reads as
// handed over; never unowned, never a third owner.
func leaveOwner(hs HoldStore, e HoldRecord, after Hold) error {
	owner, ok, err := hs.Owner(e.Addr)
	if err != nil {
		return err
	}
	if !ok || owner.ContainerID != e.Owner || owner.IfName != e.IfName {
		return nil // judged a moment ago under the store's lock; cannot happen
	}
	if after.Held() {
		if err := hs.WriteHold(e.ID, after); err != nil {
			return err
		}
		return hs.Reassign(e.Addr, owner, HoldOwner(e.ID))
	}
	if err := hs.Reassign(e.Addr, owner, e.secondAtt(owner)); err != nil {
		return err
	}
	return hs.WriteHold(e.ID, after)
}

// DropSecond ends e's migration target's share of the address (its DEL,
// a failed migration): one write of the record; the owner keeps it.
func DropSecond(hs HoldStore, e HoldRecord) error {
	return hs.WriteHold(e.ID, e.WithoutSecond())
}

// EndHold frees a hold: its address first (only while it is still held
// for it), then the record. A crash between leaves a record whose address
// is not reserved, which judgeHold reads as stale.
func EndHold(hs HoldStore, e HoldRecord) (bool, error) {
	freed := false
	if e.Addr.IsValid() {
		ok, err := hs.Release(HoldOwner(e.ID), e.Addr)
		if err != nil {
			return false, err
		}
		freed = ok
		if ok {
			if err := hs.ClearExhausted(); err != nil {
				return true, err
			}
		}
	}
	return freed, hs.RemoveHold(e.ID)
}

// Undo is what a failed ADD must put back in its stores so that it leaves
// nothing: the addresses it reserved, the holds it took over, the records
// it wrote, and the cursors of a CursorKeeper. Each list is one kind of
// step, in the order Run takes them.
type Undo struct {
	seconds, taken, records, reserved []func(a Attachment) error
	cursors                           []func() error // newest last
}

// Reserved notes that the ADD reserved ip in l.
func (u *Undo) Reserved(l Ledger, ip netip.Addr) {
	u.reserved = append(u.reserved, func(a Attachment) error { return Rollback(l, a, []netip.Addr{ip}) })
}

func (u *Undo) recorded(hs HoldStore, id string) {
	u.records = append(u.records, func(Attachment) error { return hs.RemoveHold(id) })
}

func (u *Undo) tookOver(hs HoldStore, e HoldRecord) {
	u.taken = append(u.taken, func(a Attachment) error { return giveBack(hs, e, a) })
}

func (u *Undo) seconded(hs HoldStore, id string) {
	u.seconds = append(u.seconds, func(a Attachment) error {
		e, err := LookupHold(hs, id)
		if err == nil && e != nil && e.SecondOf(a) {
			err = hs.WriteHold(e.ID, *UndoHold(&e.Hold, true))
		}
		return err
	})
}

// Run undoes everything for a, going on after failures and returning them
// joined. Holds first: a share is given back, a hold taken over is held
// again (reservation, then record); a fresh record goes before its
// reservation, so that a crash in between leaves a plain reservation,
// never a record of a freed address that someone else then takes.
// Exhaustion records stay (see Rollback). Cursors go back last, once
// nothing of the ADD is reserved any more.
func (u *Undo) Run(a Attachment) error {
	var errs []error
	for _, steps := range [][]func(Attachment) error{u.seconds, u.taken, u.records, u.reserved} {
		for _, step := range steps {
			errs = append(errs, step(a))
		}
	}
	errs = append(errs, u.restoreCursors()...)
	return errors.Join(errs...)
}
