package alloc

import "time"

// DEL of one reservation, and the undo of a failed ADD's record, decided
// once for every store: the store reads a DelView, PlanDel decides, and
// the store applies the plan its own way (the disk in the crash-safe
// write order of holds.go, HoldOnDel; etcd in transactions guarded by
// the revisions or values it read, or will compare).

// DelStep is what a DEL does with one reservation of its attachment.
type DelStep int

const (
	// DelSkip leaves it: another network's reservation in a pool the
	// networks share.
	DelSkip DelStep = iota
	// DelFree frees the attachment's own reservation: no key's record
	// holds it (a plain reservation, a stale record, a hold gone).
	DelFree
	// DelToHold makes the key's reservation its hold until now + the
	// record's holdFor (DelPlan.Hold).
	DelToHold
	// DelHandOver gives the address to the record's migration target
	// alone: the owner is deleted.
	DelHandOver
	// DelDropSecond ends the attachment's share as a migration target:
	// the owner keeps the address.
	DelDropSecond
	// DelSettle writes a record that a crash left naming the attachment
	// as it is judged (SettleHold): nothing changes hands.
	DelSettle
)

// DelView is what the store read of one reservation of the deleted
// attachment: Record, the key's record that names the attachment
// (judged: its owner, its migration target, or, as written, either),
// nil when no key has the reservation; Network, the network of the
// attachment's reservation (or share) where the store keeps it ("" where
// only the record says).
type DelView struct {
	Network string
	Record  *HoldRecord
}

// DelPlan is PlanDel's decision: the step, and for every step but
// DelSkip and DelFree the record to write. Gone is the step for a store
// that applies the plan guarded on the record as it read or assumed it
// (etcd), should the record have changed before it writes: a hold whose
// key an operator released meanwhile pins nothing, so the address is
// freed.
type DelPlan struct {
	Step DelStep
	Hold Hold
	Gone DelStep
}

// PlanDel decides the DEL of attachment a (whose container is on node,
// "" where holds are one node's) over v at now: the owner's reservation
// is released (releaseOwner); the target's share ends; a record a crash
// left naming a is settled; another network's reservation is left.
func PlanDel(a Attachment, node string, v DelView, now time.Time) DelPlan {
	e := v.Record
	mine := e != nil && e.Stale == "" && e.IfName == a.IfName && !e.Held()
	owner := mine && e.OwnedBy(node, a.ContainerID)
	switch {
	case otherNetwork(a, v.Network) || owner && otherNetwork(a, e.Network):
		return DelPlan{Step: DelSkip}
	case e == nil || e.Stale != "" || owner:
		return releaseOwner(e, now)
	case mine && e.SecondIs(node, a.ContainerID):
		return DelPlan{Step: DelDropSecond, Hold: e.WithoutSecond()}
	}
	return DelPlan{Step: DelSettle, Hold: e.Hold}
}

// releaseOwner is the one rule for releasing the owner of a reservation,
// whoever releases it (its DEL, a GC, an operator), e being the record of
// the key that has the reservation (nil or stale: no key has it): the
// address goes to the record's migration target alone, else becomes the
// key's hold from now, else is freed.
func releaseOwner(e *HoldRecord, now time.Time) DelPlan {
	switch {
	case e == nil || e.Stale != "":
		return DelPlan{Step: DelFree}
	case e.Second != "":
		return DelPlan{Step: DelHandOver, Hold: e.HandedOver()}
	}
	return DelPlan{Step: DelToHold, Hold: e.HeldFrom(now), Gone: DelFree}
}

// otherNetwork reports a reservation of another network than a's, in a
// pool that several networks share.
func otherNetwork(a Attachment, network string) bool {
	return a.Network != "" && network != "" && network != a.Network
}

// UndoHold is what a failed ADD puts back of the key's record it wrote
// for one target: nil, the record goes with the address the ADD
// reserved, when the ADD met no hold (found nil); the record without its
// migration target when the ADD was that target (shared); else the hold
// it took over, held again as found.
func UndoHold(found *Hold, shared bool) *Hold {
	if found == nil {
		return nil
	}
	h := *found
	if shared {
		h = h.WithoutSecond()
	}
	return &h
}
