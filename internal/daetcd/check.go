package daetcd

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdCheck verifies that every address in prevResult is claimed by this
// attachment, on this node and network (code 3 otherwise). Without
// addresses to verify it checks that the attachment holds any.
func cmdCheck(req *plugin.Request) error {
	c, op, targets, err := beginTargets(req)
	if err != nil {
		return err
	}
	return alloc.CheckPrev(req.Conf, targets, func() error { return op.checkOwnsAny(c.Scopes()) }, op.check)
}

// check verifies that each address, placed in its target, is claimed by
// the operation's attachment on this node and network.
func (op *operation) check(addrs []netip.Addr, placed []alloc.Target) error {
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
		shares := r.Second == op.cid && r.SecondNode == op.node && r.IfName == op.ifname && r.Network == op.network
		if !ok || !valid || (!r.owns(op.node, op.network, op.cid, op.ifname) && !shares) {
			return cnierr.New(cnierr.CodeUnknownContainer, "address not reserved for this attachment",
				"address=%s containerID=%s ifname=%s node=%s", a, op.cid, op.ifname, op.node)
		}
	}
	return nil
}

func (op *operation) checkOwnsAny(scopes []alloc.Scope) error {
	resp, err := op.readAttachment(scopes, false)
	if err != nil {
		return err
	}
	for i := range scopes {
		for _, kv := range resp.KVs(i) {
			if r, ok := decodeRecord(kv.Value); ok && !r.cancelled() && r.Network == op.network {
				return nil
			}
		}
	}
	return cnierr.New(cnierr.CodeUnknownContainer, "attachment holds no address", "containerID=%s ifname=%s node=%s", op.cid, op.ifname, op.node)
}
