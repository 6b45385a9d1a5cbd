package daetcd

import (
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdDel releases everything the attachment holds in the scopes the
// config touches: one read of its index keys, one transaction deleting
// each claim with its index key, guarded by their exact values. It needs
// no ranges, and an unknown attachment is not an error.
func cmdDel(req *plugin.Request) error {
	p, err := dapools.Parse(req.Conf, req.CNIArgs, false)
	if err != nil {
		return err
	}
	ec, err := parseEtcd(req.Conf, true)
	if err != nil {
		return err
	}
	op, err := newOperation(ec, p.Network(), req.Args.ContainerID, req.Args.IfName, req.Log)
	if err != nil {
		return err
	}
	scopes := p.Scopes()
	reads := make([]requestOp, len(scopes))
	for i, s := range scopes {
		reads[i] = getPrefix(op.keys.attachmentPrefix(op.node, s, op.cid, op.ifname))
	}
	resp, err := op.cl.read(reads...)
	if err != nil {
		return err
	}
	var txns []txnRequest
	var clear []requestOp
	for i, s := range scopes {
		n := len(txns)
		for _, kv := range resp.kvs(i) {
			// The index key is the attachment's on this node; in a pool
			// shared by several networks it must also be this network's.
			if r, ok := decodeRecord(kv.Value); ok && r.Network != op.network {
				continue
			}
			txns = append(txns, op.release(s, kv))
		}
		if len(txns) > n {
			clear = append(clear, delPrefix(op.keys.fullScope(s)))
		}
	}
	return op.commit(txns, clear...)
}
