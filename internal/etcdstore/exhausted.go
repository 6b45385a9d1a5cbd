package etcdstore

import (
	"errors"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Exhausted reads which pools of the targets' chains are exhausted (an
// ADD found them full and nothing was released there since), for the
// engine's STATUS verdict. It is code 50 when etcd has no quorum:
// members answer but cannot serve a linearizable read within the
// timeout. An etcd that nobody answers for is code 11. The check is one
// read of the exhaustion marks and the node's record, which is also the
// quorum probe.
func (op *Operation) Exhausted(targets []alloc.Target) (func(alloc.Target) (bool, error), error) {
	var reads []etcdkv.Op // the mark of every pool of every target's chain
	for _, t := range targets {
		for _, m := range t.Chain() {
			reads = append(reads, etcdkv.Get(op.keys.fullKey(m.Scope, m.RangeID)))
		}
	}
	resp, err := op.cl.Read(append(reads, etcdkv.Get(op.keys.nodeKey(op.node)))...)
	if errors.Is(err, etcdkv.ErrNoQuorum) {
		e := cnierr.As(err)
		return nil, cnierr.New(cnierr.CodeNotAvailable, "etcd has no quorum", "%s", e.Details)
	}
	if err != nil {
		return nil, err
	}
	if err := op.ensureNode(resp, len(reads)); err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for i := range reads {
		kv, ok := resp.First(i)
		marked[string(kv.Key)] = ok && len(kv.Value) > 0 // empty: freed since
	}
	return func(p alloc.Target) (bool, error) { return marked[op.keys.fullKey(p.Scope, p.RangeID)], nil }, nil
}
