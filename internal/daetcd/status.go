package daetcd

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus reads which range sets or pools of this network are
// exhausted (an ADD found them full and nothing was released there
// since) and answers alloc's verdict: 50 only when no ADD could be
// served. It answers 50 too when etcd has no quorum: members answer but
// cannot serve a linearizable read within the timeout. An etcd that
// nobody answers for is code 11. The check is one read of the exhaustion
// marks and the node's record, which is also the quorum probe.
func cmdStatus(req *plugin.Request) error {
	c, op, targets, err := beginTargets(req)
	if err != nil {
		return err
	}
	reads := make([]etcdkv.Op, 0, len(targets)+1)
	for _, t := range targets {
		reads = append(reads, etcdkv.Get(op.keys.fullKey(t.Scope, t.RangeID)))
	}
	resp, err := op.cl.Read(append(reads, etcdkv.Get(op.keys.nodeKey(op.node)))...)
	if errors.Is(err, etcdkv.ErrNoQuorum) {
		e := cnierr.As(err)
		return cnierr.New(cnierr.CodeNotAvailable, "etcd has no quorum", "%s", e.Details)
	}
	if err != nil {
		return err
	}
	node, found := resp.First(len(targets))
	if err := op.ensureNode(node, found); err != nil {
		return err
	}
	full := make([]bool, len(targets))
	for i := range targets {
		kv, ok := resp.First(i)
		full[i] = ok && len(kv.Value) > 0 // empty: freed since
	}
	return c.Status(req.Conf, targets, full)
}
