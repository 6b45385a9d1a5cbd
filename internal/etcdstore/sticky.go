package etcdstore

import (
	"encoding/json"
	"net/netip"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Sticky addresses, cluster-wide (docs/etcd.md, "Sticky addresses"): a
// hold key is written in the transaction that writes its claim and index
// key, so "the hold's owner still has its claim" is exactly "the claim
// key's mod revision is the hold's". The claim's Record names its hold
// (Record.Hold, StickyKey, HoldFor), so every release can turn it into one.

// stickyAtt is the sticky key of the attachment an ADD or DEL is for.
type stickyAtt struct {
	alloc.Keyed
	id string // alloc.StickyID(Key, ifname)
}

// stickyOf is the attachment with sticky key k, nil when it has none.
func stickyOf(k alloc.Keyed, ifname string) *stickyAtt {
	if k.Key == "" {
		return nil
	}
	return &stickyAtt{Keyed: k, id: alloc.StickyID(k.Key, ifname)}
}

func (l layout) holdScope(s alloc.Scope) string { return l.prefix + "sticky/" + s.Path() + "/" }

// holdKey is the hold of key id in scope for the range set or pool whose
// index key ends in slot.
func (l layout) holdKey(s alloc.Scope, id, slot string) string {
	return l.holdScope(s) + id + "/" + slot
}

func lastSegment(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// A hold key's value, and the claim key's of a held address, is
// alloc.Hold (Node and LastNode set: a container ID is only unique per
// node); its first fields name the owner, the address, the key and its
// holdFor, so that a DEL can compare them without reading.

func encodeHold(h alloc.Hold) []byte { return h.AppendJSON(make([]byte, 0, 256)) }

func decodeHold(b []byte) (alloc.Hold, bool) {
	var h alloc.Hold
	if json.Unmarshal(b, &h) != nil || h.Key == "" {
		return h, false
	}
	_, err := netip.ParseAddr(h.Address)
	return h, err == nil
}

// stamped is h as etcd writes it at now.
func stamped(h alloc.Hold, now time.Time) alloc.Hold {
	h.Time = stamp(now)
	return h
}

// stickyRecord marks a claim record as the sticky attachment's.
func (st *stickyAtt) mark(r Record) Record {
	if st != nil {
		r.Hold, r.StickyKey, r.HoldFor, r.Migration = st.id, st.Key, st.HoldFor.String(), st.Migration
	}
	return r
}

// takeOver is the hold an ADD takes over, as read.
type takeOver struct {
	rev   int64
	hold  alloc.Hold
	claim []byte // its address's claim, when the hold has an owner
}

// Found implements alloc.HoldClaimer: the hold the claim met; nil (after
// an exact delete) when the engine judges that it pins nothing
// (alloc.VersionedHold). Only a hold with an owner, a held one whose
// take-over failed, or one met by an ADD that requests another address
// (refused, 101, before any take-over) costs a read of its address's
// claim: a take-over's transaction makes the same comparison as its guard
// (Reserve), so a StatefulSet pod's return costs one round trip less.
func (s *claimStore) Found(f *alloc.HoldFound) (*alloc.Hold, error) {
	op, tried := s.op, s.take
	s.take, s.found = nil, nil
	kv, ok := f.Ref.(etcdkv.KV)
	if !ok {
		return nil, nil
	}
	h, ok := decodeHold(kv.Value)
	t := &takeOver{rev: kv.ModRevision, hold: h}
	claimRev := t.rev // not read: the take-over's guard
	ip, _ := netip.ParseAddr(h.Address)
	if ok && (h.Owner != "" || (tried != nil && tried.rev == t.rev) || (s.t.Requested.IsValid() && s.t.Requested != ip)) {
		resp, err := op.cl.Read(etcdkv.Get(op.keys.addrKey(s.t.Scope, ip)))
		if err != nil {
			return nil, err
		}
		claim, _ := resp.First(0)
		claimRev, t.claim = claim.ModRevision, claim.Value
	}
	if alloc.VersionedHold(h, ok, t.rev, claimRev) == nil { // it goes, if it is still as read
		_, err := op.cl.Txn(removeRecord(kv))
		return nil, err
	}
	s.found = t
	return &h, nil
}

// KeyHold implements alloc.HoldClaimer: one read of the hold key.
func (s *claimStore) KeyHold() error {
	resp, err := s.op.cl.Read(etcdkv.Get(s.holdK))
	if err != nil {
		return err
	}
	return holdFound(resp, 0)
}

// TakeOver implements alloc.HoldClaimer.
func (s *claimStore) TakeOver() { s.take = s.found }

// FreeFound implements alloc.HoldClaimer: the hold key and its address's
// claim go, each only at the revision found.
func (s *claimStore) FreeFound() error {
	t := s.found
	s.found = nil
	ip, _ := netip.ParseAddr(t.hold.Address)
	free := expireHold(s.holdK, s.op.keys.addrKey(s.t.Scope, ip), t.rev)
	free.Then = append(free.Then, freed(s.op.keys.fullKey(s.t.Scope, s.t.RangeID)))
	_, err := s.op.cl.Txn(free)
	return err
}

// expire frees the holds of scope s whose keys were read as kvs (GC's
// expired holds, an operator's release of a key's), each while as read
// (expireHold), in batches that write each exhaustion mark once (unmark):
// holds of one range set share theirs. It answers whether each was freed.
func (op *Operation) expire(s alloc.Scope, kvs []etcdkv.KV) ([]bool, error) {
	var txns []etcdkv.Txn
	marks := unmark{}
	for _, kv := range kvs {
		h, _ := decodeHold(kv.Value)
		ip, _ := netip.ParseAddr(h.Address)
		txns = append(txns, expireHold(string(kv.Key), op.keys.addrKey(s, ip), kv.ModRevision))
		marks[op.keys.markOf(s, string(kv.Key))] = nil
	}
	return op.apply(nil, txns, marks.ops()...)
}

// expireHold frees a hold and its address: both keys go while both are
// as the hold's release (or take-over) wrote them, at revision rev. The
// caller writes the exhaustion mark (freed).
func expireHold(holdK, addrK string, rev int64) etcdkv.Txn {
	t := removeRecord(etcdkv.KV{Key: []byte(holdK), ModRevision: rev})
	t.Then = append(t.Then, etcdkv.Nested(removeRecord(etcdkv.KV{Key: []byte(addrK), ModRevision: rev})))
	return t
}
