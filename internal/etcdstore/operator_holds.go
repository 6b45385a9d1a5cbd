package etcdstore

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// An operator's view of the sticky keys' holds, and the release of a
// key's holds (`release --sticky-key`).

// heldClaim is hold h, read in scope s, as an operator sees it: a Claim
// with no container.
func heldClaim(h alloc.Hold, s alloc.Scope) Claim {
	return Claim{
		Record: Record{Node: h.LastNode, IfName: h.IfName, Network: h.Network, Address: h.Address, Pool: s.Pool, Time: h.Time, StickyKey: h.Key},
		Scope:  s, Held: true, HoldExpires: h.Expires, LastOwner: h.LastOwner,
	}
}

// ReleaseHold frees sticky key's holds for ifname (every interface when
// "") in scope s now, whatever their expiry: each held address is freed
// (its hold key and claim, each at the revision read). Which, and when it
// refuses, is the engine's rule for every store (alloc.PlanRelease). It
// returns what it released.
func (o *Operator) ReleaseHold(key, ifname string, s alloc.Scope, dryRun bool) ([]Claim, error) {
	prefix := o.op.keys.holdScope(s)
	if ifname != "" {
		prefix += alloc.StickyID(key, ifname) + "/"
	}
	kvs, err := o.op.cl.List(prefix, false)
	if err != nil {
		return nil, err
	}
	// The engine (alloc.PlanRelease) decides, over the hold keys read.
	var records []alloc.HoldRecord
	byKey := map[string]etcdkv.KV{}
	for _, kv := range kvs {
		if h, ok := decodeHold(kv.Value); ok {
			records = append(records, alloc.HoldRecord{ID: string(kv.Key), Hold: h})
			byKey[string(kv.Key)] = kv
		}
	}
	p, err := alloc.PlanRelease(alloc.ReleaseView{Holds: records}, alloc.ReleaseRequest{Key: key, IfName: ifname, Where: ScopePath(s)}, o.op.now)
	if err != nil {
		return nil, err
	}
	var out []Claim
	var txns []etcdkv.Txn
	for _, e := range p.Holds {
		ip, _ := netip.ParseAddr(e.Address)
		out = append(out, heldClaim(e.Hold, s))
		txns = append(txns, expireHold(e.ID, o.op.keys.addrKey(s, ip), byKey[e.ID].ModRevision, o.op.keys.markOf(s, e.ID)))
	}
	if dryRun {
		return out, nil
	}
	applied, err := o.op.apply(nil, txns)
	if err != nil {
		return nil, err
	}
	if slices.Contains(applied, false) {
		return nil, fmt.Errorf("sticky key %q changed while being released; try again", key)
	}
	return out, nil
}
