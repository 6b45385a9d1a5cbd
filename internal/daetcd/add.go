package daetcd

import (
	"strconv"

	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// cmdAdd hands out one address per target, each with a single
// transaction in the common case, all or nothing: when a target fails,
// every claim this ADD made or may still have in flight is undone.
func cmdAdd(req *plugin.Request) (types.Result, error) {
	c, op, targets, err := beginTargets(req)
	if err != nil {
		return nil, err
	}
	res, err := c.NewResult()
	if err != nil {
		return nil, err
	}
	st, err := stickyOf(req.Conf, req.CNIArgs, op.ifname)
	if err != nil {
		return nil, err
	}
	op.quota = newQuotaState(c.Quota, targets)
	allocated, err := op.add(targets, st)
	if err != nil {
		return nil, err
	}
	for i, a := range allocated {
		res.IPs = append(res.IPs, alloc.IPConfig(a.addr, a.gw))
		req.Log.Debug("allocated", logging.String("target", targets[i].Label), logging.Stringer("address", a.addr))
	}
	return res, nil
}

// allocated is one target's address and gateway.
type allocated struct {
	addr netip.Prefix
	gw   netip.Addr
}

// add allocates one address per target for the operation's attachment
// (with sticky key st, nil for none), all or nothing.
func (op *operation) add(targets []alloc.Target, st *stickyAtt) ([]allocated, error) {
	claim := newClaimID()
	att := op.attachment()
	var stores []*claimStore
	var out []allocated
	allocate := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
		s := op.stickyStore(t, claim, st)
		stores = append(stores, s)
		if err := s.requireSource(t); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
		if st != nil {
			return alloc.AllocateClaimed(s, att, op.node, t, st.Key, st.Migration, op.now)
		}
		return t.Allocator(s).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
	}
	key, mig := "", ""
	if st != nil {
		key, mig = st.Key, st.Migration
	}
	for _, t := range targets {
		var a allocated
		locate := op.locator(t, st)
		enforce, err := alloc.QuotaGate(op.quotaOf(), t, key, mig, locate, func() (int, error) { return op.count(op.quota) })
		if op.quota != nil {
			op.quota.enforce = enforce
		}
		if err == nil {
			a.addr, a.gw, _, err = alloc.AllocateOverflow(t, att, locate, allocate)
		}
		if err != nil {
			op.cl.Extend()
			if cerr := op.cancel(stores); cerr != nil {
				op.log.Error("undoing the failed ADD's claims failed; the runtime's DEL or GC will remove them",
					logging.Error(cerr))
			}
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// locator is alloc.AllocateOverflow's look at t's chain: one read of the
// attachment's index key and the key's hold in every pool of the chain,
// made at the first call (only targets with a chain call it).
func (op *operation) locator(t alloc.Target, st *stickyAtt) func(alloc.Target) (alloc.Presence, error) {
	var found map[alloc.Scope]alloc.Presence
	return func(c alloc.Target) (alloc.Presence, error) {
		if found != nil {
			return found[c.Scope], nil
		}
		chain := t.Chain()
		var reads []etcdkv.Op
		for _, p := range chain {
			reads = append(reads, etcdkv.Get(op.slotKey(p.Scope, p.RangeID)))
			if st != nil {
				reads = append(reads, etcdkv.Get(op.keys.holdKey(p.Scope, st.id, strconv.Itoa(p.RangeID))))
			}
		}
		resp, err := op.cl.Read(reads...)
		if err != nil {
			return alloc.Presence{}, err
		}
		found = map[alloc.Scope]alloc.Presence{}
		per := len(reads) / len(chain)
		for i, p := range chain {
			var at alloc.Presence
			if kv, ok := resp.First(i * per); ok {
				if r, valid := decodeRecord(kv.Value); valid && !r.cancelled() {
					at.Attached, _ = parseAddr(r.Address)
				}
			}
			if st != nil {
				if kv, ok := resp.First(i*per + 1); ok {
					h, valid := decodeHold(kv.Value)
					at.KeyHeld = valid && h.For(st.Key, op.ifname) && !h.Expired(op.now)
				}
			}
			found[p.Scope] = at
		}
		return found[c.Scope], nil
	}
}

// quotaOf is the ADD's quota, nil without one.
func (op *operation) quotaOf() *pool.Quota {
	if op.quota == nil {
		return nil
	}
	return op.quota.q
}
