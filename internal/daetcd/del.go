package daetcd

import (
	"time"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel releases everything the attachment holds in the scopes the
// config touches: one read of its index keys, one transaction deleting
// each claim with its index key, guarded by their exact values. It needs
// no ranges, and an unknown attachment is not an error.
func cmdDel(req *plugin.Request) error {
	p, op, err := begin(req, false)
	if err != nil {
		return err
	}
	scopes := p.Scopes()
	if done, err := op.delFromPrev(req); done || err != nil {
		return err
	}
	resp, err := op.readAttachment(scopes)
	if err != nil {
		return err
	}
	var txns []txnRequest
	marks := unmark{}
	for i, s := range scopes {
		for _, kv := range resp.kvs(i) {
			// The index key is the attachment's on this node; in a pool
			// shared by several networks it must also be this network's.
			if r, ok := decodeRecord(kv.Value); ok && r.Network != op.network {
				continue
			}
			txns = append(txns, op.release(s, kv, marks))
		}
	}
	return op.commit(txns, marks.ops()...)
}

// delFromPrev is DEL in one round trip when prevResult lists the
// attachment's addresses and the ranges still place them: each claim and
// its index key are deleted if their records begin with this owner and
// address (valueHasPrefix), and the same transaction then reads what the
// attachment still holds. done is false when that is not nothing (an
// address missing from prevResult, a failed ADD's marker): the read path
// then finishes the job.
func (op *operation) delFromPrev(req *plugin.Request) (done bool, err error) {
	addrs, err := dapools.PrevAddrs(req.Conf)
	if err != nil || len(addrs) == 0 {
		return false, nil
	}
	p, err := dapools.Parse(req.Conf, req.CNIArgs, true)
	if err != nil {
		return false, nil
	}
	targets, err := p.Targets()
	if err != nil {
		return false, nil
	}
	var outer txnRequest
	marks := unmark{}
	for _, a := range addrs {
		t, ok := targetFor(targets, a)
		if !ok {
			return false, nil
		}
		addrK, slotK := op.keys.addrKey(t.Scope, a), op.slotKey(t.Scope, t.RangeID)
		marks[op.keys.fullKey(t.Scope, t.RangeID)] = true
		owner := op.record(t.Scope, a.String(), "", time.Time{}).ownerPrefix()
		outer.Success = append(outer.Success, requestOp{Txn: &txnRequest{
			Compare: append(valueHasPrefix(addrK, owner), valueHasPrefix(slotK, owner)...),
			Success: []requestOp{del(addrK), del(slotK)},
		}})
	}
	outer.Success = append(outer.Success, marks.ops()...)
	scopes := p.Scopes()
	first := len(outer.Success)
	for _, s := range scopes {
		outer.Success = append(outer.Success, getPrefix(op.keys.attachmentPrefix(op.node, s, op.cid, op.ifname)))
	}
	resp, err := op.cl.txn(outer)
	if err != nil {
		return false, err
	}
	for i := range scopes {
		for _, kv := range resp.kvs(first + i) {
			if r, ok := decodeRecord(kv.Value); !ok || r.Network == op.network {
				return false, nil
			}
		}
	}
	return true, nil
}
