package etcdstore

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Check verifies that every address of prevResult (addrs) is claimed by
// this attachment, on this node and network (code 3 otherwise). Without
// addresses, the engine's rule (alloc.CheckHeld) over what it holds.
func (op *Operation) Check(addrs []netip.Addr, targets []alloc.Target) error {
	return alloc.CheckPrev(addrs, targets, alloc.Attachment{ContainerID: op.att.ContainerID, IfName: op.att.IfName}, op.held, op.check)
}

// check verifies that each address, placed in its target, is the
// operation's attachment's on this node by the engine's verdict
// (Attachment.Checks) on the claim's owner and migration target, each
// with the node the claim records it on.
func (op *Operation) check(addrs []netip.Addr, placed []alloc.Target) error {
	reads := make([]etcdkv.Op, len(addrs))
	for i, a := range addrs {
		reads[i] = etcdkv.Get(op.keys.addrKey(placed[i].Scope, a))
	}
	resp, err := op.cl.Read(reads...)
	if err != nil {
		return err
	}
	for i, a := range addrs {
		kv, ok := resp.First(i)
		r, valid := decodeRecord(kv.Value)
		second := alloc.Attachment{ContainerID: r.Second, IfName: r.IfName, Network: r.Network}
		if !ok || !valid || !op.att.Checks(op.node, r.attachment(), r.Node, second, r.SecondNode) {
			return alloc.NotReserved(op.att, a)
		}
	}
	return nil
}

// held is what the operation's attachment's index keys name in each
// scope, in one read: its claims, and what it shares as a migration
// target, where CHECK's verdict (Attachment.Checks) counts them as its.
func (op *Operation) held(scopes []alloc.Scope) (map[alloc.Scope][]netip.Addr, error) {
	resp, err := op.readAttachment(scopes, false)
	if err != nil {
		return nil, err
	}
	out := map[alloc.Scope][]netip.Addr{}
	for i, s := range scopes {
		for _, kv := range resp.KVs(i) {
			if r, ok := decodeRecord(kv.Value); ok && op.att.Checks(op.node, r.attachment(), r.Node, alloc.Attachment{}, "") {
				if ip, err := parseAddr(r.Address); err == nil {
					out[s] = append(out[s], ip)
				}
			}
		}
	}
	return out, nil
}
