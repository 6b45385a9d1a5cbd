package daetcd

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
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
	var marks []alloc.Target // every pool of every target's chain
	for _, t := range targets {
		marks = append(marks, t.Chain()...)
	}
	reads := make([]etcdkv.Op, 0, len(marks)+1)
	for _, m := range marks {
		reads = append(reads, etcdkv.Get(op.keys.fullKey(m.Scope, m.RangeID)))
	}
	resp, err := op.cl.Read(append(reads, etcdkv.Get(op.keys.nodeKey(op.node)))...)
	if errors.Is(err, etcdkv.ErrNoQuorum) {
		e := cnierr.As(err)
		return cnierr.New(cnierr.CodeNotAvailable, "etcd has no quorum", "%s", e.Details)
	}
	if err != nil {
		return err
	}
	node, found := resp.First(len(marks))
	if err := op.ensureNode(node, found); err != nil {
		return err
	}
	type mark struct {
		scope alloc.Scope
		id    int
	}
	marked := map[mark]bool{}
	for i, m := range marks {
		kv, ok := resp.First(i)
		marked[mark{m.Scope, m.RangeID}] = ok && len(kv.Value) > 0 // empty: freed since
	}
	choices, err := ipamconf.Choices(req.Conf, c)
	if err != nil {
		return err
	}
	return c.Status(targets, choices, func(p alloc.Target) (bool, error) { return marked[mark{p.Scope, p.RangeID}], nil })
}
