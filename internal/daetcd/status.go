package daetcd

import (
	"errors"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus answers 50 while a range set or pool this network allocates
// from is exhausted (an ADD found it full and nothing was released there
// since), or when etcd has no quorum: members answer but cannot serve a
// linearizable read within the timeout. An etcd that nobody answers for
// is code 11. The check is one read of the exhaustion marks and the
// node's record, which is also the quorum probe.
func cmdStatus(req *plugin.Request) error {
	c, op, targets, err := beginTargets(req)
	if err != nil {
		return err
	}
	statusTargets := c.WithDefinedPools(targets)
	var marks []alloc.Target
	for _, t := range statusTargets {
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
	start := 0 // the first of t's chain's marks
	for _, t := range statusTargets {
		chain := t.Chain()
		full, _ := alloc.ChainFull(t, func(p alloc.Target) (bool, error) {
			kv, ok := resp.First(start + slices.IndexFunc(chain, func(c alloc.Target) bool { return c.Scope == p.Scope }))
			return ok && len(kv.Value) > 0, nil // empty: freed since
		})
		if full {
			return cnierr.New(cnierr.CodeNotAvailable, "address pool exhausted", "%s", t.Label)
		}
		start += len(chain)
	}
	return nil
}
