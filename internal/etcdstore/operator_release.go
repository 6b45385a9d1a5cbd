package etcdstore

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Release is an operator's release in scope s: of q.Addr's claim, or of
// sticky key q.Key's holds. The engine decides (alloc.PlanRelease) over
// what is read; unless dryRun, the plan is applied in transactions
// guarded by what was read.
func (o *Operator) Release(s alloc.Scope, q alloc.ReleaseRequest, dryRun bool) (p alloc.ReleasePlan, err error) {
	if q.Where = s.Path(); q.Key != "" {
		return o.releaseHolds(s, q, dryRun)
	}
	if q.Node != "" {
		if err := ValidNodeName("--node", q.Node); err != nil {
			return p, err
		}
	}
	resp, err := o.op.cl.Read(etcdkv.Get(o.op.keys.addrKey(s, q.Addr)))
	if err != nil {
		return p, err
	}
	kv, ok := resp.First(0)
	r, valid := decodeRecord(kv.Value)
	v := alloc.ReleaseView{Reserved: ok, NoOwner: !valid}
	if h, held := decodeHold(kv.Value); !valid && held && h.Held() {
		v.Record = &alloc.HoldRecord{Hold: h}
	} else if valid {
		v.Owner, v.OwnerNode, v.Record = r.attachment(), r.Node, r.hold()
	}
	if p, err = alloc.PlanRelease(v, q, o.op.now); err == nil {
		err = o.releaseClaim(s, q.Addr, kv, r, p, dryRun)
	}
	return p, err
}

// releaseClaim releases addr's claim kv (record r) as p plans. The claim
// goes through the index key that names it, as a DEL releases it
// (commitShared: a sticky claim becomes a hold, which release
// --sticky-key frees), writing the attachment's fence bucket as any
// release does (fence.go). A migration's share ends through the index
// key of the owner it ends for: the target's (DelDropSecond), or the
// source's, whose address the target keeps (DelHandOver). A claim no
// index key names goes alone, while as read. A dry run only reads.
func (o *Operator) releaseClaim(s alloc.Scope, addr netip.Addr, kv etcdkv.KV, r Record, p alloc.ReleasePlan, dryRun bool) error {
	shared := p.Del.Step == alloc.DelDropSecond || p.Del.Step == alloc.DelHandOver
	idx, err := o.op.cl.Read(etcdkv.GetPrefix(o.op.keys.attachmentPrefix(p.Node, s, p.Owner.ContainerID, r.IfName)))
	if err != nil {
		return err
	}
	i := slices.IndexFunc(idx.KVs(0), func(ikv etcdkv.KV) bool {
		ir, ok := decodeRecord(ikv.Value)
		return (shared && ok && ir.Address == r.Address && ir.sharing()) || (!shared && bytes.Equal(ikv.Value, kv.Value))
	})
	switch {
	case i < 0 && shared:
		err = errReleaseRaced
	case dryRun:
	case i >= 0:
		err = o.op.commitShared(s, idx.KVs(0)[i], "")
	default:
		err = o.op.commitOne(etcdkv.Txn{If: []etcdkv.Cmp{etcdkv.ValueIs(string(kv.Key), kv.Value)}, Then: []etcdkv.Op{etcdkv.Delete(string(kv.Key))}}, o.op.bump(r))
	}
	if errors.Is(err, errReleaseRaced) {
		return fmt.Errorf("%s in %s changed while being released; nothing done, try again", addr, s.Path())
	}
	return err
}

// releaseHolds frees sticky key q.Key's holds (q.IfName's only, when set)
// in scope s now, whatever their expiry, as the engine plans it over the
// hold keys as written (etcd has no judgeHold): each hold key and its
// claim at the revision read, as GC frees expired holds (expire).
func (o *Operator) releaseHolds(s alloc.Scope, q alloc.ReleaseRequest, dryRun bool) (p alloc.ReleasePlan, err error) {
	prefix := o.op.keys.holdScope(s)
	if q.IfName != "" {
		prefix += alloc.StickyID(q.Key, q.IfName) + "/"
	}
	kvs, err := o.op.cl.List(prefix, false)
	if err != nil {
		return p, err
	}
	var v alloc.ReleaseView
	read := map[string]etcdkv.KV{}
	for _, kv := range kvs {
		if h, ok := decodeHold(kv.Value); ok {
			ip, _ := netip.ParseAddr(h.Address)
			v.Holds = append(v.Holds, alloc.HoldRecord{ID: string(kv.Key), Hold: h, Addr: ip})
			read[string(kv.Key)] = kv
		}
	}
	if p, err = alloc.PlanRelease(v, q, o.op.now); err != nil || dryRun {
		return p, err
	}
	var ends []etcdkv.KV
	for _, e := range p.Holds {
		ends = append(ends, read[e.ID])
	}
	applied, err := o.op.expire(s, ends)
	if err == nil && slices.Contains(applied, false) {
		err = fmt.Errorf("sticky key %q changed while being released; try again", q.Key)
	}
	return p, err
}
