package etcdstore

import (
	"net/netip"
	"slices"
	"strconv"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
)

// Add is alloc.Add over claims, one transaction per target in the common
// case, for the attachment's sticky key keyed (Key "" none) under its
// tenant's quota (the config's; nil: none).
func (op *Operation) Add(targets []alloc.Target, keyed alloc.Keyed) ([]*current.IPConfig, error) {
	q, st := op.conf.Quota, stickyOf(keyed, op.att.IfName)
	op.quota = newQuotaState(q, targets)
	claim := newClaimID()
	var stores []*claimStore
	// Without a key, no claim meets a hold: AllocateClaimed only searches.
	allocate := func(t alloc.Target) (netip.Prefix, netip.Addr, error) {
		s := op.claimStore(t, claim, st)
		stores = append(stores, s)
		return alloc.AllocateClaimed(s, op.att, op.node, t, keyed.Key, keyed.Migration, op.now)
	}
	return alloc.Add{Targets: targets, Att: op.att, Quota: q, Keyed: keyed, Log: op.log,
		Steps: func(t alloc.Target) (func(alloc.Target) (alloc.Presence, error), func(alloc.Target) (netip.Prefix, netip.Addr, error)) {
			if op.quota != nil {
				op.quota.enforce = false
			}
			return op.locator(t, st), allocate
		},
		InUse: func() (int, error) {
			op.quota.enforce = true
			return op.count(op.quota)
		},
		Undo: func() error { return op.cancel(stores) },
	}.Run()
}

// locator is alloc.AllocateOverflow's look at t's chain: one read, at
// the first call (only targets with a chain call it), of the
// attachment's index key and the key's hold in every pool of the chain,
// for the engine to judge (alloc.Located; a hold's claim is Found's to
// judge, if the ADD meets it).
func (op *Operation) locator(t alloc.Target, st *stickyAtt) func(alloc.Target) (alloc.Presence, error) {
	chain, key := t.Chain(), ""
	var reads []etcdkv.Op
	for _, p := range chain {
		reads = append(reads, etcdkv.Get(op.slotKey(p.Scope, p.RangeID)))
		if st != nil {
			key = st.Key
			reads = append(reads, etcdkv.Get(op.keys.holdKey(p.Scope, st.id, strconv.Itoa(p.RangeID))))
		}
	}
	var resp *etcdkv.Response
	return func(c alloc.Target) (at alloc.Presence, err error) {
		if resp == nil {
			if resp, err = op.cl.Read(reads...); err != nil {
				return at, err
			}
		}
		i := len(reads) / len(chain) * slices.IndexFunc(chain, func(p alloc.Target) bool { return p.Scope == c.Scope })
		var held []netip.Addr
		index, _ := resp.First(i)
		if r, ok := decodeRecord(index.Value); ok {
			if ip, err := parseAddr(r.Address); err == nil { // a marker or a fence names none
				held = append(held, ip)
			}
		}
		holdKV, _ := resp.First(i + 1)
		var hold *alloc.HoldRecord
		if h, valid := decodeHold(holdKV.Value); st != nil && valid {
			hold = &alloc.HoldRecord{Hold: h}
		}
		return alloc.Located(c, held, hold, key, op.att.IfName, op.now), nil
	}
}
