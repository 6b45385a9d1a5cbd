package alloc

import (
	"fmt"
	"net/netip"
	"time"
)

// DEL's part for holds, and the rule that finishes a transition a crash
// stopped between its two writes. A DEL must leave its attachment out of
// every record, whatever arguments it comes with: a runtime may send it
// after a restart without the pod's name or annotations, so without the
// key. What the attachment is part of is found from the state: the
// reservations it has, and the records that name it, as judged
// (judgeHold) or as written.

// HoldOnDel is DEL's part for holds, before Release: every reservation of
// a that a key has becomes a hold until now + its record's holdFor (that
// of the ADD), or its migration target's alone, so that Release no longer
// sees it as a's; a's share as a migration target ends, the owner keeping
// the address; and a record that still names a after a crash stopped a
// transition (the source's DEL of a migration killed between its two
// writes: the reservation is the target's, the record still names the
// source) is finished (SettleHold). key, when the DEL knows it (runtimes
// usually send DEL the ADD's arguments), finds the records by ID;
// otherwise, or when that does not account for a, every record is read.
// An attachment that figures in no record (a refused ADD's rollback DEL)
// changes nothing, and a DEL retried any number of times, from any crash
// point, writes nothing more once the first one finished.
func HoldOnDel(hs HoldStore, a Attachment, key string, now time.Time) ([]netip.Addr, error) {
	addrs, err := hs.ByAttachment(a)
	if err != nil {
		return nil, err
	}
	records, err := namingRecords(hs, a, key, len(addrs))
	if err != nil {
		return nil, err
	}
	var held []netip.Addr
	for _, e := range records {
		p := PlanDel(a, "", DelView{Record: &e}, now)
		if err := applyDel(hs, e, p); err != nil {
			return held, err
		}
		if p.Step == DelToHold || p.Step == DelHandOver {
			held = append(held, e.Addr)
		}
	}
	return held, nil
}

// namingRecords finds the records that name a (HoldRecord.Names), a
// having count reservations in hs. With the key, by ID: a key's records
// are one per range set, from the first on, so that the second DEL a
// runtime sends for every pod (containerd's RemovePodSandbox) reads a
// record, not the directory. The key only narrows the search: when its
// records do not account for each of a's reservations, or it has none
// (the DEL's arguments gave another source's key, or the key holds
// nothing), every record is read.
func namingRecords(hs HoldReader, a Attachment, key string, count int) ([]HoldRecord, error) {
	if key != "" {
		var found []HoldRecord
		owned, seen := 0, false
		for n := 0; n < maxRangeSets; n++ {
			e, err := LookupHold(hs, HoldID(key, a.IfName, n))
			if err != nil {
				return nil, err
			}
			if e == nil {
				if n >= count {
					break
				}
				continue
			}
			seen = true
			if e.Names(a) {
				found = append(found, *e)
			}
			if e.Keyed(a) {
				owned++
			}
		}
		if seen && owned == count {
			return found, nil
		}
	}
	return holdsWhere(hs, func(e HoldRecord) bool { return e.Names(a) })
}

// Names reports a record that names attachment a: as judged, its owner
// or migration target; as written, one the record names although its
// address says otherwise (Unfinished).
func (e HoldRecord) Names(a Attachment) bool {
	if e.Stale != "" || e.IfName != a.IfName || a.ContainerID == "" {
		return false
	}
	return e.Keyed(a) || e.SecondOf(a) || e.Written.Owner == a.ContainerID || e.Written.Second == a.ContainerID
}

// Unfinished says why e, as written, is not what it is judged to be: it
// names as owner or migration target a container that its address's
// reservation no longer names, because a crash stopped a transition
// between its two writes. "" when it is finished. Every reader already
// acts on the judged record; SettleHold writes it, so that the record
// says what holds (for the operators' tools, and for a store that reads
// records without judging them).
func (e HoldRecord) Unfinished() string {
	if e.Stale != "" {
		return ""
	}
	w := e.Written
	gone := func(node, cid string) bool { return cid != "" && !e.OwnedBy(node, cid) && !e.SecondIs(node, cid) }
	switch {
	case gone(w.Node, w.Owner) && w.Second != "" && e.OwnedBy(w.SecondNode, w.Second):
		return fmt.Sprintf("names container %s as the owner of %s and %s as its migration target, but %s has it alone: the source's DEL stopped before it finished the hand-over",
			w.owner(), e.Address, w.second(), w.second())
	case gone(w.Node, w.Owner):
		return fmt.Sprintf("names container %s as the owner of %s, which has no reservation of it (%s): an ADD or DEL stopped part-way", w.owner(), e.Address, e.state())
	case gone(w.SecondNode, w.Second):
		return fmt.Sprintf("names container %s as the migration target of %s, which shares nothing (%s): a DEL stopped part-way", w.second(), e.Address, e.state())
	}
	return ""
}

// state says who has e's address, for messages.
func (e HoldRecord) state() string {
	if e.Held() {
		return "it is held for its key"
	}
	return "it is reserved by " + e.owner()
}

// SettleHold finishes the transition a crash stopped in e (Unfinished):
// one write of the record as judged, which is what every operation
// already acts on, so nothing changes hands. A source's DEL stopped
// between its two writes is finished as its second write would have
// finished it: the target the sole owner, the source its last owner. A
// finished record is not written again: DELs, GC and fsck --repair call
// it as often as they run.
func SettleHold(hs HoldStore, e HoldRecord) error {
	if e.Unfinished() == "" {
		return nil
	}
	return hs.WriteHold(e.ID, e.Hold)
}

// applyDel applies PlanDel's decision p for record e in the write order
// of its transition (holds.go). DelFree is Release's, after HoldOnDel.
func applyDel(hs HoldStore, e HoldRecord, p DelPlan) error {
	switch p.Step {
	case DelToHold, DelHandOver:
		return leaveOwner(hs, e, p.Hold)
	case DelDropSecond:
		return hs.WriteHold(e.ID, p.Hold)
	case DelSettle:
		return SettleHold(hs, e)
	}
	return nil
}
