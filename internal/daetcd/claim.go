package daetcd

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// claimStore is etcd as the host-local allocator sees it while an ADD
// allocates one target (a range set or a pool). The allocator keeps its
// rules (requested addresses, gateways, exclusions, the iteration order,
// 100/101); the store turns each candidate into one transaction:
//
//	if claim key absent and the attachment's index key absent (or, after a
//	failed ADD, still its marker):   put both, with the owner record
//	else:                            read both (the holder, in the same round trip)
//
// The index-key condition is the duplicate check, atomic with the claim:
// an attachment can never hold two addresses of one range set or pool,
// however its ADDs race or are retried.
type claimStore struct {
	op     *operation
	scope  dapools.Scope
	slot   int
	set    addrspace.RangeSet
	claim  string // this ADD's claim ID
	now    time.Time
	label  string
	marker int64 // mod revision of a failed ADD's marker in our index key, to take over

	sent       []byte // the record of the last claim sent: ours if it is found later
	sentAddr   netip.Addr
	won        netip.Addr
	taken      map[netip.Addr]bool
	collisions int
	scanned    bool
}

// prefetchAfter: past this many taken candidates the pool is filling up,
// and one read of its keys is cheaper than a transaction per taken address.
const prefetchAfter = 4

func (op *operation) claimStore(t dapools.Target, claim string, now time.Time) *claimStore {
	return &claimStore{op: op, scope: t.Scope, slot: t.RangeID, set: t.Set, claim: claim, now: now, label: t.Label, taken: map[netip.Addr]bool{}}
}

// Reserve claims ip for the attachment; false when someone holds it.
func (s *claimStore) Reserve(_ hostlocal.Attachment, ip netip.Addr) (bool, error) {
	if s.taken[ip] {
		return false, nil
	}
	op := s.op
	val := op.record(s.scope, ip.String(), s.claim, s.now).encode()
	addrK, slotK := op.keys.addrKey(s.scope, ip), op.slotKey(s.scope, s.slot)
	s.sent, s.sentAddr = val, ip
	for try := 0; try < 8; try++ {
		slotCond := absent(slotK)
		if s.marker != 0 {
			slotCond = modIs(slotK, s.marker)
		}
		resp, err := op.cl.txn(txnRequest{
			Compare: []compare{absent(addrK), slotCond},
			Success: []requestOp{put(addrK, val), put(slotK, val)},
			Failure: []requestOp{get(addrK), get(slotK)},
		})
		if err != nil {
			return false, err
		}
		if resp.Succeeded {
			s.won = ip
			return true, nil
		}
		holder, held := resp.first(0)
		slot, hasSlot := resp.first(1)
		if hasSlot && bytes.Equal(slot.Value, val) {
			// Our own claim: the client resent it after the first answer
			// was lost, and the first had committed.
			s.won = ip
			return true, nil
		}
		if hasSlot {
			r, _ := decodeRecord(slot.Value)
			if !r.cancelled() {
				s.sent = nil // definitely not ours: nothing to undo
				return false, cnierr.New(cnierr.CodeDuplicateAttach, "attachment already holds an address",
					"address=%s %s containerID=%s ifname=%s", r.Address, s.label, op.cid, op.ifname)
			}
			if slot.ModRevision != s.marker {
				s.marker = slot.ModRevision // a failed ADD's marker: take it over, exactly this one
				continue
			}
		} else {
			s.marker = 0
		}
		if held {
			if r, ok := decodeRecord(holder.Value); ok {
				op.log.Debug("address taken", logging.String("address", ip.String()), logging.String("node", r.Node),
					logging.String("containerID", r.ContainerID))
			}
			s.sent = nil
			s.noteTaken(ip)
			return false, nil
		}
	}
	return false, cnierr.New(cnierr.CodeTryAgainLater, "claim kept conflicting", "address=%s %s", ip, s.label)
}

// noteTaken remembers a taken candidate, and once the pool looks busy
// reads all of its claim keys once, so that the rest of the search skips
// taken addresses without a round trip each.
func (s *claimStore) noteTaken(ip netip.Addr) {
	s.taken[ip] = true
	s.collisions++
	if s.collisions < prefetchAfter || s.scanned {
		return
	}
	s.scanned = true
	prefix := s.op.keys.scopeAddrs(s.scope)
	resp, err := s.op.cl.read(requestOp{Range: &rangeRequest{Key: []byte(prefix), RangeEnd: prefixEnd(prefix), KeysOnly: true}})
	if err != nil {
		return // only an optimisation: the search goes on a claim at a time
	}
	for _, kv := range resp.kvs(0) {
		if a, err := parseAddr(string(kv.Key[len(prefix):])); err == nil {
			s.taken[a] = true
		}
	}
}

// LastReserved is where the search starts: an address derived from the
// node and the attachment (see startAddr). There is no shared cursor: a
// cursor key would be the one hot key every ADD of the pool writes.
func (s *claimStore) LastReserved(int) (netip.Addr, error) {
	op := s.op
	return startAddr(s.set, op.node+"\x00"+op.network+"\x00"+op.cid+"\x00"+op.ifname+"\x00"+scopePath(s.scope)), nil
}

// SetLastReserved: no cursor (see LastReserved).
func (s *claimStore) SetLastReserved(int, netip.Addr) error { return nil }

// ByAttachment is the allocator's duplicate check. Here it is part of
// every claim's transaction (the index-key condition), where it cannot
// race; a separate read before the claim would add a round trip and still
// be a check-then-act, so there is nothing to return.
func (s *claimStore) ByAttachment(hostlocal.Attachment) ([]netip.Addr, error) { return nil, nil }

// SaveCursor and RestoreCursor: no cursor (see LastReserved), so a failed
// ADD has none to put back.
func (s *claimStore) SaveCursor(rangeID int) (hostlocal.Cursor, error) {
	return hostlocal.Cursor{RangeID: rangeID}, nil
}

// RestoreCursor: see SaveCursor.
func (s *claimStore) RestoreCursor(hostlocal.Cursor) error { return nil }

// MarkExhausted records, for STATUS, that an ADD found the target full.
func (s *claimStore) MarkExhausted(int) error {
	_, err := s.op.cl.txn(txnRequest{Success: []requestOp{put(s.op.keys.fullKey(s.scope, s.slot), []byte(s.now.UTC().Format(time.RFC3339)))}})
	return err
}

// ClearExhausted: every release clears the marks in its own transaction.
func (s *claimStore) ClearExhausted() error { return nil }

// Owner returns who holds ip in this target's scope.
func (s *claimStore) Owner(ip netip.Addr) (hostlocal.Attachment, bool, error) {
	resp, err := s.op.cl.read(get(s.op.keys.addrKey(s.scope, ip)))
	if err != nil {
		return hostlocal.Attachment{}, false, err
	}
	kv, ok := resp.first(0)
	if !ok {
		return hostlocal.Attachment{}, false, nil
	}
	r, _ := decodeRecord(kv.Value)
	return r.attachment(), true, nil
}

// Release frees ip if this attachment holds it (the allocator's undo).
func (s *claimStore) Release(_ hostlocal.Attachment, ip netip.Addr) (bool, error) {
	if ip != s.won {
		return false, nil
	}
	if err := s.op.cancel([]*claimStore{s}); err != nil {
		return false, err
	}
	return true, nil
}

// All is GC's listing; ipam-da-etcd's GC reads the node's index keys
// instead, so a claim store never lists a pool.
func (s *claimStore) All() (map[netip.Addr]hostlocal.Attachment, error) {
	return nil, cnierr.New(cnierr.CodeInternal, "claim store cannot list a pool", "%s", s.label)
}

// cancel undoes an ADD's claims that succeeded or may still commit (a
// claim whose answer never came). Each target's index key is left holding
// a marker, which a claim still in flight cannot get past (it requires the
// key absent); the runtime's DEL for the failed ADD, or GC, removes it,
// and a new ADD of the attachment takes it over.
func (op *operation) cancel(stores []*claimStore) error {
	var txns []txnRequest
	marks := unmark{}
	for _, s := range stores {
		if s.sent == nil {
			continue
		}
		if s.won.IsValid() { // an address freed: its range set is not full
			marks[op.keys.fullKey(s.scope, s.slot)] = true
		}
		slotK := op.slotKey(s.scope, s.slot)
		marker := op.record(s.scope, "", s.claim, s.now).encode()
		txns = append(txns, txnRequest{
			Compare: []compare{absent(slotK)},
			Success: []requestOp{put(slotK, marker)},
			Failure: []requestOp{{Txn: &txnRequest{
				Compare: []compare{valueIs(slotK, s.sent)},
				Success: []requestOp{del(op.keys.addrKey(s.scope, s.sentAddr)), put(slotK, marker)},
			}}},
		})
		s.won = netip.Addr{}
	}
	return op.commit(txns, marks.ops()...)
}
