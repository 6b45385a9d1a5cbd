package alloc

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// Garbage collection, decided once for every store and for fsck: a store
// reads a GCView, PlanGC decides, and the store applies the plan (the
// disk under its lock through CollectGC, in the write order of the
// transitions in holds.go; etcd in transactions guarded by the revisions
// it read). A dry run plans the same way and applies nothing; fsck
// reports and repairs each record by the same RepairOf.

// RecordFix is what every GC and fsck --repair do with one hold record,
// whatever the keep set says.
type RecordFix int

const (
	// KeepRecord: the record is as it should be.
	KeepRecord RecordFix = iota
	// RemoveRecord: a stale record, which holds nothing, goes.
	RemoveRecord
	// EndExpired: a hold past its expiry is freed (EndHold).
	EndExpired
	// DropBadSecond: a migration target no ADD writes loses its share
	// (DropSecond); the owner keeps the address.
	DropBadSecond
)

// RecordRepair is RepairOf's judgement of one record: Settle, when not
// "", says why the record is written as judged first (SettleHold), then
// Fix applies.
type RecordRepair struct {
	Record HoldRecord
	Settle string
	Fix    RecordFix
}

// RepairOf judges record e at now: unfinished records are settled, stale
// ones removed, expired holds ended, and invalid migration targets
// dropped.
func RepairOf(e HoldRecord, now time.Time) RecordRepair {
	r := RecordRepair{Record: e, Settle: e.Unfinished()}
	switch {
	case e.Stale != "":
		r.Fix = RemoveRecord
	case e.Expired(now):
		r.Fix = EndExpired
	case e.SecondProblem() != "":
		r.Fix = DropBadSecond
	}
	return r
}

// GCView is what a GC reads: every reservation by address (its owner) and
// every hold record, judged.
type GCView struct {
	Owners map[netip.Addr]Attachment
	Holds  []HoldRecord
}

// GCStep is the plan for one hold record: its repair, then, for a record
// of a reservation, what the keep set ends: EndShare drops a migration
// target not kept; Release makes an owner not kept give the address to
// its kept target, or to its key as a hold (as their DELs would).
type GCStep struct {
	RecordRepair
	EndShare bool
	Release  bool
}

// GCPlan is PlanGC's decision: the records' steps, in ID order, and the
// reservations freed, which no record names.
type GCPlan struct {
	Records []GCStep
	Free    []netip.Addr
}

// PlanGC decides a GC over v: every record is repaired (RepairOf); the
// reservations are judged as the claims of a ClaimsView, by PlanClaims,
// the one plan of every store's GC: a record's owner and its migration
// target are one claim each, the target's shared. A reservation's
// record whose target is not kept loses the share, and whose owner is
// not kept is released as its DEL would (the key keeps the address); any
// other reservation not kept is freed. Unexpired holds stay whatever
// keep says: their owners are '_' owners, which KeepSet never frees.
func PlanGC(v GCView, keep func(Attachment) bool, now time.Time) GCPlan {
	var p GCPlan
	var claims []GCClaim
	for i, e := range v.Holds {
		p.Records = append(p.Records, GCStep{RecordRepair: RepairOf(e, now)})
		if owner, ok := v.Owners[e.Addr]; ok && e.Stale == "" && !e.Held() {
			claims = append(claims, GCClaim{Owner: owner, Ref: recordRef{i, false}})
			if e.Second != "" && p.Records[i].Fix != DropBadSecond {
				claims = append(claims, GCClaim{Owner: e.secondAtt(owner), Shared: true, Ref: recordRef{i, true}})
			}
		}
	}
	named := validlyNamed(v.Holds)
	for _, ip := range slices.SortedFunc(maps.Keys(v.Owners), netip.Addr.Compare) {
		if !named[ip] {
			claims = append(claims, GCClaim{Owner: v.Owners[ip], Ref: ip})
		}
	}
	cp := PlanClaims(ClaimsView{Claims: claims}, keep, now)
	for _, c := range append(cp.Release, cp.EndShare...) {
		switch ref := c.Ref.(type) {
		case recordRef:
			p.Records[ref.i].EndShare = p.Records[ref.i].EndShare || ref.second
			p.Records[ref.i].Release = p.Records[ref.i].Release || !ref.second
		case netip.Addr:
			p.Free = append(p.Free, ref)
		}
	}
	return p
}

// recordRef names a claim of PlanGC's view: record i's owner, or its
// migration target.
type recordRef struct {
	i      int
	second bool
}

// Orphans lists the addresses of v held for a hold (HoldOwner) that no
// valid record names: nothing can ever claim them. fsck --repair frees
// them; GC leaves them, as it leaves every '_' owner.
func Orphans(v GCView) []netip.Addr {
	named := validlyNamed(v.Holds)
	var out []netip.Addr
	for _, ip := range slices.SortedFunc(maps.Keys(v.Owners), netip.Addr.Compare) {
		if _, held := HoldIDOf(v.Owners[ip]); held && !named[ip] {
			out = append(out, ip)
		}
	}
	return out
}

// validlyNamed is the addresses that a record which is not stale names.
func validlyNamed(holds []HoldRecord) map[netip.Addr]bool {
	named := map[netip.Addr]bool{}
	for _, e := range holds {
		named[e.Addr] = named[e.Addr] || e.Stale == ""
	}
	return named
}

// Freed lists the addresses p frees: expired holds, then reservations.
func (p GCPlan) Freed() []netip.Addr {
	var out []netip.Addr
	for _, s := range p.Records {
		if s.Fix == EndExpired {
			out = append(out, s.Record.Addr)
		}
	}
	return append(out, p.Free...)
}

// Held lists the addresses whose owner p releases to a hold or to its
// migration target, in CollectGC's order.
func (p GCPlan) Held() []netip.Addr {
	var out []netip.Addr
	for _, s := range p.Records {
		if s.Release {
			out = append(out, s.Record.Addr)
		}
	}
	return out
}

// ReadGC reads l's GC view: its reservations, and its hold records when
// it keeps holds.
func ReadGC(l Lister) (GCView, error) {
	owners, err := l.All()
	if err != nil {
		return GCView{}, err
	}
	v := GCView{Owners: owners}
	if hs, ok := l.(HoldStore); ok {
		v.Holds, err = ListHolds(hs)
	}
	return v, err
}

// Repair carries out r in hs: the settle, then the fix. It returns
// whether an expired hold's address was freed.
func Repair(hs HoldStore, r RecordRepair) (bool, error) {
	e := r.Record
	if err := SettleHold(hs, e); err != nil {
		return false, err
	}
	switch r.Fix {
	case RemoveRecord:
		return false, hs.RemoveHold(e.ID)
	case EndExpired:
		return EndHold(hs, e)
	case DropBadSecond:
		return false, DropSecond(hs, e)
	}
	return false, nil
}

// CollectGC is a GC of l under its lock: read (ReadGC), plan (PlanGC),
// then apply, in l (a HoldStore where the plan has records, which ReadGC
// reads only from one): each record's steps in the write order of their
// transitions, going on after failures; then, only if every record's
// steps succeeded (else a reservation that failed to become a hold would
// be freed), the free reservations, each only while its owner in the
// view still has it. It returns the addresses freed (expired holds
// first) and those that became holds or went to a migration target, and
// the errors joined.
func CollectGC(l Lister, keep func(Attachment) bool, now time.Time) (freed, held []netip.Addr, err error) {
	v, err := ReadGC(l)
	if err != nil {
		return nil, nil, err
	}
	p := PlanGC(v, keep, now)
	hs, _ := l.(HoldStore)
	var errs []error
	for _, s := range p.Records {
		e := s.Record
		ok, err := Repair(hs, s.RecordRepair)
		if ok {
			freed = append(freed, e.Addr)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.Fix == DropBadSecond {
			e.Hold = e.WithoutSecond()
		}
		if s.EndShare {
			if err := DropSecond(hs, e); err != nil {
				errs = append(errs, err)
				continue
			}
			e.Hold = e.WithoutSecond()
		}
		if s.Release {
			if err := applyDel(hs, e, releaseOwner(&e, now)); err != nil {
				errs = append(errs, err)
				continue
			}
			held = append(held, e.Addr)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return freed, held, err
	}
	var released []netip.Addr
	for _, ip := range p.Free {
		ok, err := l.Release(v.Owners[ip], ip)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			released = append(released, ip)
		}
	}
	errs = append(errs, clearIfReleased(l, released))
	return append(freed, released...), held, errors.Join(errs...)
}
