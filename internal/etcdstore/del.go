package etcdstore

import (
	"errors"
	"net/netip"
	"strconv"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Del releases everything the attachment holds in the config's scopes (as
// ipamconf.ParseDel parses it: ranges only while they parse), through
// prevResult in one round trip when it can (delFromPrev), else by its
// exact read path (delRead). Its first round trip writes the attachment's
// fence bucket (fence.go), so no claim of the attachment sent before the
// DEL can commit after it. An unknown attachment is not an error.
func (op *Operation) Del(hints []netip.Addr, keyed *alloc.Keyed) error {
	done, fenced, err := op.delFromPrev(hints, keyed)
	if done || err != nil {
		return err
	}
	scopes := op.conf.Scopes()
	err = op.delRead(scopes, !fenced)
	// A sticky release that lost a race with a migration target's share
	// (which rewrites the owner's keys) reads again: bounded, then 11.
	for try := 1; errors.Is(err, errReleaseRaced) && try < maxReleaseRaces; try++ {
		err = op.delRead(scopes, false)
	}
	return err
}

// errReleaseRaced: a sticky release found the keys it read changed: a
// migration's target shared the address meanwhile, or its other owner
// released it. Code 11: the runtime (GC: the next GC) tries again.
var errReleaseRaced = cnierr.Wrap(types.NewError(cnierr.CodeTryAgainLater, "a sticky address changed between its read and its release", "try again"),
	errors.New("release raced"))

// maxReleaseRaces bounds DEL's reads of an address that keeps changing.
const maxReleaseRaces = 4

// delRead is DEL's exact read path: one read of the attachment's index
// keys (with fence, writing its fence bucket), one transaction releasing
// each claim and index key they name at their exact revisions.
func (op *Operation) delRead(scopes []alloc.Scope, fence bool) error {
	resp, err := op.readAttachment(scopes, fence)
	if err != nil {
		return err
	}
	var txns []etcdkv.Txn
	var sticky []bool // txns[i] makes a sticky owner's claim a hold
	for i, s := range scopes {
		for _, kv := range resp.KVs(i) {
			// The index key is the attachment's on this node; in a pool
			// shared by several networks the engine leaves another
			// network's. A fence an earlier version left there (a
			// "released" record, gone with its lease) holds nothing.
			r, ok := decodeRecord(kv.Value)
			if ok && r.Released {
				continue
			}
			if ok && r.sharing() {
				if err := op.commitShared(s, kv, op.att.Network); err != nil {
					return err
				}
				continue
			}
			if t, step := op.release(s, kv, op.att.Network, op.keys.markOf(s, string(kv.Key))); step != alloc.DelSkip {
				sticky = append(sticky, step == alloc.DelToHold)
				txns = append(txns, t)
			}
		}
	}
	if len(txns) == 0 {
		return nil
	}
	// No fence bucket here: this DEL wrote it before it read (here or in
	// delFromPrev), which fenced every claim sent before the DEL. A sticky
	// owner's keys can change under its DEL (a migration target shares
	// them): each of its releases must have happened.
	applied, err := op.apply(nil, txns, op.touch())
	for i := range applied {
		if sticky[i] && !applied[i] {
			err = errReleaseRaced
		}
	}
	return err
}

// delFromPrev is DEL in one round trip when prevResult lists the
// attachment's addresses and the ranges still place them: each claim and
// its index key go if their records are this owner's for that address and
// older than this DEL (Record.writtenBefore), so a late copy of the DEL
// (after the attachment was ADDed again, likely to the same address)
// deletes nothing; the same transaction reads what the attachment still
// holds. done is false when it still holds something the engine's plan
// releases (an address missing from prevResult, a failed ADD's marker, a
// record from this very instant): the read path finishes. fenced: the
// transaction was sent, which wrote the attachment's fence bucket.
func (op *Operation) delFromPrev(addrs []netip.Addr, keyed *alloc.Keyed) (done, fenced bool, err error) {
	if len(addrs) == 0 || keyed == nil {
		return false, false, nil
	}
	targets, err := op.conf.AddTargets()
	if err != nil {
		return false, false, nil
	}
	st := stickyOf(*keyed, op.att.IfName)
	var outer etcdkv.Txn
	seen := map[string]bool{}
	for _, a := range addrs {
		t, ok, err := alloc.TargetFor(targets, a)
		if err != nil || !ok {
			return false, false, nil
		}
		addrK, slotK := op.keys.addrKey(t.Scope, a), op.slotKey(t.Scope, t.RangeID)
		if seen[slotK] {
			return false, false, nil // two addresses for one index key: not this attachment's result
		}
		seen[slotK] = true
		r := st.mark(op.recordOf(op.att, t.Scope, a.String(), ""))
		lo, hi := r.ownerPrefix(), r.writtenBefore()
		release := etcdkv.Txn{
			If: []etcdkv.Cmp{
				etcdkv.ValueAbove(addrK, lo), etcdkv.ValueBelow(addrK, hi),
				etcdkv.ValueAbove(slotK, lo), etcdkv.ValueBelow(slotK, hi),
			},
			Then: []etcdkv.Op{etcdkv.Delete(slotK)},
		}
		holdK := ""
		if st != nil {
			// The release requires the hold key still this owner's alone
			// for this address, written with this DEL's key and holdFor
			// (the plan's record), so the plan's hold needs no condition of
			// its own: owned's fields, then "," (below its closing "}"). A
			// shared hold, one of another holdFor, a sticky record this DEL
			// derives no key for differ there: the read path releases them
			// as stored (a shared address goes to the migration's target).
			holdK = op.keys.holdKey(t.Scope, st.id, strconv.Itoa(t.RangeID))
			owned := encodeHold(r.hold().Hold)
			release.If = append(release.If, etcdkv.ValueAbove(holdK, owned[:len(owned)-1]), etcdkv.ValueBelow(holdK, owned))
		}
		release.Then = append(release.Then, op.applyDel(op.planDel(op.att, r), addrK, holdK, nil, op.keys.fullKey(t.Scope, t.RangeID))...)
		outer.Then = append(outer.Then, etcdkv.Nested(release))
	}
	outer.Then = append(outer.Then, op.touch(), op.bumpOwn())
	scopes := op.conf.Scopes()
	first := len(outer.Then)
	for _, s := range scopes {
		outer.Then = append(outer.Then, etcdkv.GetPrefix(op.keys.attachmentPrefix(op.node, s, op.att.ContainerID, op.att.IfName)))
	}
	resp, err := op.cl.Txn(outer)
	if err != nil {
		return false, false, err
	}
	op.bumpedOwn(resp.Revision)
	for i := range scopes {
		for _, kv := range resp.KVs(first + i) {
			if r, ok := decodeRecord(kv.Value); !ok || !r.Released && op.planDel(op.att, r).Step != alloc.DelSkip {
				return false, true, nil
			}
		}
	}
	return true, true, nil
}
