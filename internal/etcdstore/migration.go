package etcdstore

import (
	"errors"
	"net/netip"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// A KubeVirt live migration's two owners, cluster-wide (docs/etcd.md,
// "Sticky addresses (cluster-wide)"). The owner's claim, index key and
// hold carry the target (Record.Second..., alloc.Hold.Second...), and the
// target's own index key is marked Shares, so its DEL, CHECK and GC find
// it as any attachment's. The four keys share one mod revision: every
// transition is one transaction conditioned on it, so a crash leaves the
// state before or after it, never a third owner or none while one runs.

// Share implements alloc.HoldClaimer: a claim (send) while the hold, the
// owner's claim and its index key are at the revision found and this
// attachment's index key is free (absent, or a marker or fence it takes
// over; else an *alloc.AttachedFound); its undo puts the owner's keys
// back as found and the hold as the engine undoes a share (alloc.UndoHold).
func (s *claimStore) Share(a alloc.Attachment, mig string) (bool, error) {
	op, t := s.op, s.found // the engine shares only a hold Found returned
	s.found = nil
	owner, ok := decodeRecord(t.claim)
	if !ok || owner.Hold == "" {
		return false, nil
	}
	ip, _ := netip.ParseAddr(t.hold.Address) // decodeHold parsed it
	addrK, srcSlotK := op.keys.addrKey(s.t.Scope, ip), op.keys.slotKey(owner.Node, s.t.Scope, owner.ContainerID, owner.IfName, s.t.RangeID)
	h := stamped(t.hold.SharedWith(op.node, a.ContainerID, mig), op.now)
	after, holdAfter := owner.holding(h).encode(), encodeHold(h)
	mine := s.sticky.mark(op.recordOf(a, s.t.Scope, ip.String(), s.claim))
	mine.Shares, mine.Migration = true, ""
	val := mine.encode()
	undo := etcdkv.Txn{
		If:   []etcdkv.Cmp{etcdkv.ValueIs(addrK, after), etcdkv.ValueIs(srcSlotK, after), etcdkv.ValueIs(s.holdK, holdAfter)},
		Then: []etcdkv.Op{etcdkv.Put(addrK, t.claim), etcdkv.Put(srcSlotK, t.claim), etcdkv.Put(s.holdK, encodeHold(*alloc.UndoHold(&h, true)))},
	}
	ok, err := s.send(ip, val, []etcdkv.Cmp{etcdkv.ModIs(s.holdK, t.rev), etcdkv.ModIs(addrK, t.rev), etcdkv.ModIs(srcSlotK, t.rev)},
		[]etcdkv.Op{etcdkv.Put(addrK, after), etcdkv.Put(srcSlotK, after), etcdkv.Put(s.holdK, holdAfter), etcdkv.Put(op.slotKey(s.t.Scope, s.t.RangeID), val)}, undo, true)
	if _, changed := errors.AsType[*alloc.HoldFound](err); changed {
		return false, nil // the hold or the owner's claim changed: the engine looks again
	}
	return ok, err
}

// holding is claim r as the hold h says: its owner and migration target.
func (r Record) holding(h alloc.Hold) Record {
	r.Node, r.ContainerID, r.Migration = h.Node, h.Owner, h.Migration
	r.SecondNode, r.Second, r.SecondMigration = h.SecondNode, h.Second, h.SecondMigration
	return r
}

// sharing reports a record of an address two owners share: the owner's
// (r.Second set) or the migration target's (r.Shares).
func (r Record) sharing() bool { return r.Hold != "" && (r.Second != "" || r.Shares) }

// commitShared applies the engine's plan (alloc.PlanDel) for the record
// of index key kv, for a DEL in network ("" for any). A
// sharing one's is planned over the hold and the owner's claim it reads:
// the source hands the address to the target, the target ends its
// share, while all four keys are at their one revision. Any other record,
// or a share gone meanwhile, is released as any claim (release). A release that finds the address changed is one
// to retry (errReleaseRaced), never a silent no-op that would leave the
// address with an owner that is gone.
func (op *Operation) commitShared(s alloc.Scope, kv etcdkv.KV, network string) error {
	r, _ := decodeRecord(kv.Value)
	alone := func() error {
		t, step := op.release(s, kv, network, op.keys.markOf(s, string(kv.Key)))
		if step == alloc.DelSkip {
			return nil
		}
		t.Then = append(t.Then, op.bump(r)) // sent alone: it writes its own fence bucket
		return op.commitOne(t)
	}
	slotK, slot := string(kv.Key), lastSegment(string(kv.Key))
	a := r.attachment()
	a.Network = network
	ip, err := parseAddr(r.Address)
	n, nerr := strconv.Atoi(slot)
	if err != nil || nerr != nil || !r.sharing() {
		return alone()
	}
	addrK, holdK := op.keys.addrKey(s, ip), op.keys.holdKey(s, r.Hold, slot)
	resp, err := op.cl.Read(etcdkv.Get(addrK), etcdkv.Get(holdK))
	if err != nil {
		return err
	}
	claim, _ := resp.First(0)
	hkv, _ := resp.First(1)
	owner, _ := decodeRecord(claim.Value) // one that does not decode has no Second: released alone
	h, okH := decodeHold(hkv.Value)
	rev := claim.ModRevision
	p := alloc.PlanDel(a, r.Node, alloc.DelView{Network: r.Network, Record: alloc.VersionedHold(h, okH, hkv.ModRevision, rev)}, op.now)
	ownerSlotK := op.keys.slotKey(owner.Node, s, owner.ContainerID, owner.IfName, n)
	targetSlotK := op.keys.slotKey(owner.SecondNode, s, owner.Second, owner.IfName, n)
	// The index key of the owner whose share ends; "" for any other step.
	mineK := map[alloc.DelStep]string{alloc.DelHandOver: ownerSlotK, alloc.DelDropSecond: targetSlotK}[p.Step]
	switch {
	case p.Step == alloc.DelSkip:
		return nil
	case owner.Second == "" || slotK != mineK:
		return alone()
	}
	// The claim and the index key of the owner that stays say what the
	// planned hold says; a target handed the address is its claimant now.
	v := owner.holding(p.Hold)
	if p.Step == alloc.DelHandOver {
		v.Time = stamp(op.now)
	}
	keep := op.keys.slotKey(v.Node, s, v.ContainerID, v.IfName, n)
	cond := []etcdkv.Cmp{etcdkv.ModIs(addrK, rev), etcdkv.ModIs(holdK, rev), etcdkv.ModIs(ownerSlotK, rev), etcdkv.ModIs(targetSlotK, rev)}
	b := v.encode()
	return op.commitOne(etcdkv.Txn{If: cond, Then: []etcdkv.Op{etcdkv.Delete(slotK), op.bump(r), etcdkv.Put(addrK, b), etcdkv.Put(keep, b),
		etcdkv.Put(holdK, encodeHold(stamped(p.Hold, op.now)))}})
}

// commitOne applies release t alone, with extra (a fence bucket), as
// apply sends a batch: errReleaseRaced when what t compares changed.
func (op *Operation) commitOne(t etcdkv.Txn, extra ...etcdkv.Op) error {
	applied, err := op.apply(nil, []etcdkv.Txn{t}, extra...)
	if err == nil && !applied[0] {
		err = errReleaseRaced
	}
	return err
}
