package daetcd

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdGC (spec 1.1) releases this node's claims of this network whose
// attachment is not in cni.dev/valid-attachments (hostlocal.KeepSet, the
// rule every GC follows), failed ADDs' markers included. It reads this node's index keys of each scope, so another
// node's claims are never even looked at. It keeps going after errors.
func cmdGC(req *plugin.Request) error {
	p, op, err := begin(req, false) // GC has no attachment: op's is empty
	if err != nil {
		return err
	}
	valid, err := dapools.ValidAttachments(req.Conf)
	if err != nil {
		return err
	}
	keep := hostlocal.NewKeepSet(op.network, valid)
	scopes := p.Scopes()
	reads := make([]requestOp, len(scopes))
	for i, s := range scopes {
		reads[i] = getPrefix(op.keys.nodeScope(op.node, s))
	}
	resp, err := op.cl.read(reads...)
	if err != nil {
		return err
	}
	var errs []error
	for i, s := range scopes {
		var txns []txnRequest
		marks := unmark{}
		for _, kv := range resp.kvs(i) {
			r, ok := decodeRecord(kv.Value)
			if !ok || r.Network != op.network || keep.Keeps(r.attachment()) {
				continue
			}
			txns = append(txns, op.release(s, kv, marks))
			req.Log.Info("gc releases", logging.String("address", r.Address), logging.String("containerID", r.ContainerID), logging.String("ifname", r.IfName))
		}
		errs = append(errs, op.commitBatches(txns, marks))
	}
	return errors.Join(errs...)
}

// maxNested keeps a transaction within etcd's default --max-txn-ops (128).
const maxNested = 32

// commitBatches releases in transactions of at most maxNested claims,
// each also clearing the exhaustion marks.
func (op *operation) commitBatches(txns []txnRequest, marks unmark) error {
	var errs []error
	for len(txns) > 0 {
		n := min(len(txns), maxNested)
		errs = append(errs, op.commit(txns[:n], marks.ops()...))
		txns = txns[n:]
	}
	return errors.Join(errs...)
}
