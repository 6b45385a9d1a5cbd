package etcdstore

import (
	"net/netip"
	"strconv"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// Allocated is one target's address and gateway: what the personality
// prints.
type Allocated struct {
	Addr    netip.Prefix
	Gateway netip.Addr
}

// Add hands out one address per target, each with a single
// transaction in the common case, all or nothing: when a target fails,
// every claim this ADD made or may still have in flight is undone. The
// attachment's sticky key and its tenant's quota q (nil: none) come from
// conf and cniArgs, which the personality already parsed once.
func (op *Operation) Add(targets []alloc.Target, q *pool.Quota, conf *netconf.Envelope, cniArgs []netconf.CNIArg) ([]Allocated, error) {
	st, err := stickyOf(conf, cniArgs, op.ifname)
	if err != nil {
		return nil, err
	}
	op.quota = newQuotaState(q, targets)
	claim := newClaimID()
	att := op.attachment()
	var stores []*claimStore
	var out []Allocated
	allocate := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
		s := op.claimStore(t, claim, st)
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
		var a Allocated
		locate := op.locator(t, st)
		enforce, err := alloc.QuotaGate(q, t, key, mig, locate, func() (int, error) { return op.count(op.quota) })
		if op.quota != nil {
			op.quota.enforce = enforce
		}
		if err == nil {
			a.Addr, a.Gateway, _, err = alloc.AllocateOverflow(t, att, locate, allocate)
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
func (op *Operation) locator(t alloc.Target, st *stickyAtt) func(alloc.Target) (alloc.Presence, error) {
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
