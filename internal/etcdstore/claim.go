package etcdstore

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"net/netip"
	"slices"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// claimStore is etcd as the allocation engine sees it while an ADD
// allocates one target (a range set or a pool): an alloc.Store, not a
// Ledger, because DEL, CHECK and GC are transactions of their own here.
// The engine keeps its rules (requested addresses, gateways, exclusions,
// the iteration order, 100/101); the store turns each candidate into one
// transaction:
//
//	if claim key absent, the attachment's index key absent (or, after a
//	failed ADD, still its marker) and the node is this machine:
//	                                 put both, with the owner record
//	else:                            read both and the node (the holder, in the same round trip)
//
// A node's first claim registers the node in the same transaction
// (claimOnce). The index-key condition is the duplicate check, atomic
// with the claim (a read before it would cost a round trip and still be
// a check-then-act), however the attachment's ADDs race or are retried.
type claimStore struct {
	op     *Operation
	t      alloc.Target
	claim  string // this ADD's claim ID
	marker int64  // mod revision of the marker in our index key that the claim takes over (0: none)

	sent     []byte // the record of the last claim sent: ours if it is found later
	inFlight bool   // a claim may still commit: cancel must fence it
	taken    map[netip.Addr]bool
	sawTaken int64 // the revision at which a candidate was first seen taken
	scanned  bool

	sticky  *stickyAtt // nil: not sticky (sticky.go)
	holdK   string
	found   *takeOver  // the hold the last claim met (alloc.HoldClaimer)
	take    *takeOver  // the hold the next claim takes over (the last one sent took over, until Found)
	undoing etcdkv.Txn // cancel's undo of the last claim sent, once committed (send)
}

var _ alloc.HoldClaimer = (*claimStore)(nil)

// prefetchAfter: past this many taken candidates the pool is filling up,
// and one read of its keys is cheaper than a transaction per taken address.
const prefetchAfter = 4

// claimStore is the store of target t for an ADD's claims, named claim,
// with the attachment's sticky key st (nil: none).
func (op *Operation) claimStore(t alloc.Target, claim string, st *stickyAtt) *claimStore {
	s := &claimStore{op: op, t: t, claim: claim, taken: map[netip.Addr]bool{}}
	if st != nil {
		s.sticky, s.holdK = st, op.keys.holdKey(t.Scope, st.id, strconv.Itoa(t.RangeID))
	}
	return s
}

// Reserve claims ip for a on this node (its claim record, index key and,
// when sticky, hold); false when someone holds it. A claimStore claims
// for its operation's attachment (a is it), whose claims cancel undoes.
func (s *claimStore) Reserve(a alloc.Attachment, ip netip.Addr) (bool, error) {
	op := s.op
	if s.taken[ip] && s.take == nil {
		return false, nil
	}
	val := s.sticky.mark(op.recordOf(a, s.t.Scope, ip.String(), s.claim)).encode()
	addrK := op.keys.addrKey(s.t.Scope, ip)
	cond := []etcdkv.Cmp{etcdkv.Absent(addrK)}
	then := []etcdkv.Op{etcdkv.Put(addrK, val), etcdkv.Put(op.slotKey(s.t.Scope, s.t.RangeID), val)}
	undo := []etcdkv.Op{etcdkv.Delete(addrK), freed(op.keys.fullKey(s.t.Scope, s.t.RangeID))}
	if s.sticky != nil {
		// The hold key absent, or the hold taken over with its address's
		// claim as found; it gets the engine's record of the reservation
		// (alloc.KeyRecord). Undone, the address goes with its new hold,
		// or the hold taken over is put back (alloc.UndoHold).
		var found *alloc.Hold
		cond = append(cond, etcdkv.Absent(s.holdK))
		if t := s.take; t != nil {
			found, cond = &t.hold, []etcdkv.Cmp{etcdkv.ModIs(s.holdK, t.rev), etcdkv.ModIs(addrK, t.rev)}
		}
		then = append(then, etcdkv.Put(s.holdK, encodeHold(stamped(alloc.KeyRecord(found, a, op.node, ip.String(), s.sticky.Keyed), op.now))))
		undo = append(undo, etcdkv.Delete(s.holdK))
		if h := alloc.UndoHold(found, false); h != nil {
			back := encodeHold(stamped(*h, op.now))
			undo = []etcdkv.Op{etcdkv.Put(addrK, back), etcdkv.Put(s.holdK, back)}
		}
	}
	return s.send(ip, val, cond, then, etcdkv.Txn{Then: undo}, s.take != nil)
}

// send is a claim of ip for the attachment (Reserve's or Share's):
// conditions cond and writes then, val its index key's record, undo
// what cancel does once it committed (besides the marker). takes: the
// engine's TakeOver or Share, so no quota (alloc.HoldClaimer), and any
// change to what it takes over ends it with alloc.HoldFound. Refused
// for sure (no claim of it in flight), it leaves cancel nothing to undo.
func (s *claimStore) send(ip netip.Addr, val []byte, cond []etcdkv.Cmp, then []etcdkv.Op, undo etcdkv.Txn, takes bool) (ok bool, err error) {
	defer func() {
		if !ok && !s.inFlight {
			s.sent = nil
		}
	}()
	op := s.op
	addrK, slotK, fenceK := op.keys.addrKey(s.t.Scope, ip), op.slotKey(s.t.Scope, s.t.RangeID), op.fenceKey()
	s.sent, s.undoing = val, undo
	// The else branch reads the claim key, the index key, the node, the
	// node's fence buckets (holdersFences), then the hold and the
	// tenant's version.
	holders := []etcdkv.Op{etcdkv.Get(addrK), etcdkv.Get(slotK), etcdkv.Get(op.keys.nodeKey(op.node)), etcdkv.GetPrefix(op.keys.fencesPrefix(op.node))}
	if s.sticky != nil {
		holders = append(holders, etcdkv.Get(s.holdK))
	}
	qs := op.quota
	if takes {
		qs = nil
	} else if qs != nil {
		holders = append(holders, etcdkv.Get(op.keys.tenantVersion(qs.name)))
	}
	recounts := 0
	for try := 0; try < 8+recounts; try++ {
		// TxnOnce: its condition (keys absent) is what this ADD's own
		// fence or undo changes, so a second copy could claim after
		// them; it is never sent twice. A copy that etcd applies after
		// the attachment's DEL finds the release's fence (fence.go).
		// A claim for a tenant requires its version as counted (quota.go).
		cnd, thn := append(slices.Clip(cond), atRev(slotK, s.marker)), then
		if qs != nil {
			cnd, thn = qs.claimOps(op.keys, s.t.Scope, ip, cnd, slices.Clip(then))
		}
		resp, registeredNow, err := op.claimOnce(fenceK, cnd, thn, holders)
		if errors.Is(err, etcdkv.ErrOutcomeUnknown) {
			s.inFlight = true
			// Fence it instead: a marker in the index key, through another
			// member, and the copy in flight can never commit; or the
			// index key shows that it already did.
			op.log.Warn("claim unanswered; fencing it", logging.String("address", ip.String()), logging.Error(err))
			resp, err = op.cl.Txn(s.marking(slotK, s.marker, holders...))
			if err == nil && resp.Succeeded {
				s.marker = resp.Revision // our marker: the next try takes it over
				continue
			}
		}
		if err != nil {
			return false, err
		}
		holder, held := resp.First(0)
		slot, hasSlot := resp.First(1)
		// Ours: committed now (its writes read nothing), or committed
		// although its answer was lost (the index key at its revision).
		if resp.Succeeded || (hasSlot && bytes.Equal(slot.Value, val)) {
			if qs != nil {
				qs.version, qs.stale = cmp.Or(slot.ModRevision, resp.Revision), nil
			}
			return true, nil
		}
		if again, err := op.nodeRefused(resp, 2); err != nil {
			return false, err
		} else if again {
			continue
		}
		if r, _ := decodeRecord(slot.Value); hasSlot && !r.cancelled() {
			// Before any recount or fence retry: a retried ADD is 102 at
			// the quota as below it (alloc.QuotaGate), the engine's answer.
			ip, _ := parseAddr(r.Address)
			return false, &alloc.AttachedFound{Addr: ip}
		}
		if op.fenceRefused(resp.KVs(holdersFences), fenceK, registeredNow) {
			continue
		}
		if v, _ := resp.First(len(holders) - 1); qs != nil && qs.enforce && v.ModRevision != qs.version && recounts <= qs.q.Max+maxRecounts {
			// Another claim for the tenant committed since the count:
			// count again, in this transaction's place (a try of its
			// own), and the engine judges that count.
			recounts++
			if n, err := op.count(qs); err != nil {
				return false, err
			} else if err := alloc.QuotaReached(qs.q, n); err != nil {
				return false, err
			}
			continue
		}
		if hasSlot && slot.ModRevision != s.marker {
			s.marker = slot.ModRevision // a failed ADD's marker: take it over, exactly this one
			continue
		}
		s.marker = slot.ModRevision // 0: the index key is absent
		if _, hasHold := resp.First(holdersFences + 1); s.sticky != nil && (hasHold || takes) {
			// The key has a hold (or the one taken over changed or went):
			// the search ends, the engine applies the rules.
			return false, holdFound(resp, holdersFences+1)
		}
		if held {
			r, _ := decodeRecord(holder.Value)
			op.log.Debug("address taken", logging.String("address", ip.String()), logging.String("node", r.Node),
				logging.String("containerID", r.ContainerID))
			s.noteTaken(ip, resp.Revision)
			return false, nil
		}
	}
	return false, cnierr.New(cnierr.CodeTryAgainLater, "claim kept conflicting", "address=%s %s", ip, s.t.Label)
}

// holdFound is the hold read at i of resp for the engine's rules (no
// Ref: the key has none).
func holdFound(resp *etcdkv.Response, i int) *alloc.HoldFound {
	if kv, ok := resp.First(i); ok {
		return &alloc.HoldFound{Ref: kv}
	}
	return &alloc.HoldFound{}
}

// holdersFences is where a failed claim's answer has the node's fence
// buckets.
const holdersFences = 3

// maxRecounts bounds, beyond the quota's max (each claim for the tenant
// that commits moves its version once), how often one claim counts its
// tenant again.
const maxRecounts = 8

// marking leaves this ADD's marker in index key slotK while it is at
// revision rev (0: absent), else does els. Only while the attachment's
// fence bucket is as this ADD knows it: once a release moved it, no claim
// of the ADD can commit anyway, and a late copy of this write, sent again
// on another member, must not leave a marker after the attachment's DEL
// (fence.go).
func (s *claimStore) marking(slotK string, rev int64, els ...etcdkv.Op) etcdkv.Txn {
	op := s.op
	return etcdkv.Txn{
		If:   append([]etcdkv.Cmp{atRev(slotK, rev)}, op.fenceCmp(op.fenceKey())...),
		Then: []etcdkv.Op{etcdkv.Put(slotK, op.recordOf(op.att, s.t.Scope, "", s.claim).encode())},
		Else: els,
	}
}

// atRev requires key at mod revision rev, or absent for 0 (a create
// revision compare, the wire shape a key's absence always has).
func atRev(key string, rev int64) etcdkv.Cmp {
	if rev != 0 {
		return etcdkv.ModIs(key, rev)
	}
	return etcdkv.Absent(key)
}

// noteTaken remembers a taken candidate, and once the pool looks busy
// reads all of its claim keys once, so that the rest of the search skips
// taken addresses without a round trip each.
func (s *claimStore) noteTaken(ip netip.Addr, rev int64) {
	s.sawTaken, s.taken[ip] = cmp.Or(s.sawTaken, rev), true
	if len(s.taken) < prefetchAfter || s.scanned {
		return
	}
	s.scanned = true
	prefix := s.op.keys.scopeAddrs(s.t.Scope)
	kvs, err := s.op.cl.List(prefix, true)
	if err != nil {
		return // only an optimisation: the search goes on a claim at a time
	}
	for _, kv := range kvs {
		if a, err := parseAddr(string(kv.Key[len(prefix):])); err == nil {
			s.taken[a] = true
		}
	}
}

// LastReserved implements alloc.Store: etcd keeps no cursor (a cursor
// key would be the one hot key every ADD of the pool writes), so the
// search starts where the engine starts one without it.
func (s *claimStore) LastReserved(int) (netip.Addr, error) {
	return alloc.SpreadStart(s.t.Set, s.op.node, s.op.att, s.t.Scope), nil
}

// MarkExhausted records, for STATUS, that an ADD found the target full,
// unless an address was freed there since the search first saw one taken
// (see freed).
func (s *claimStore) MarkExhausted(int) error {
	k := s.op.keys.fullKey(s.t.Scope, s.t.RangeID)
	_, err := s.op.cl.Txn(etcdkv.Txn{
		// Never saw one taken: no address to take at all, nothing can free one.
		If:   []etcdkv.Cmp{etcdkv.ModBelow(k, cmp.Or(s.sawTaken, math.MaxInt64-1)+1)},
		Then: []etcdkv.Op{etcdkv.Put(k, []byte(stamp(s.op.now)))},
	})
	return err
}

// cancel undoes an ADD's claims that succeeded or may still commit (a
// claim whose answer never came), leaving a marker in each index key,
// which a claim in flight cannot get past (it requires the key absent, or
// the exact marker it took over); the failed ADD's DEL, or GC, removes
// it, and a new ADD of the attachment takes it over. A committed claim is
// undone (s.undoing) while its index key is as sent; one that may still
// commit over the marker it took over gets the new marker there instead.
// It may run a little past the deadline (etcdkv.Client.Extend).
func (op *Operation) cancel(stores []*claimStore) error {
	op.cl.Extend()
	var txns []etcdkv.Txn
	for _, s := range stores {
		if s.sent == nil {
			continue
		}
		slotK := op.slotKey(s.t.Scope, s.t.RangeID)
		m := s.marking(slotK, 0)
		marker := m.Then[0]
		undo := etcdkv.Txn{
			If:   append([]etcdkv.Cmp{etcdkv.ValueIs(slotK, s.sent)}, s.undoing.If...),
			Then: append([]etcdkv.Op{marker}, s.undoing.Then...),
		}
		if s.marker != 0 {
			undo.Else = []etcdkv.Op{etcdkv.Nested(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ModIs(slotK, s.marker)}, Then: []etcdkv.Op{marker}})}
		}
		m.Else = []etcdkv.Op{etcdkv.Nested(undo)}
		txns = append(txns, m)
	}
	_, err := op.apply(nil, txns)
	return err
}
