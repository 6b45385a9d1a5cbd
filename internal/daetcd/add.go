package daetcd

import (
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/logging"
	"github.com/cniplugins/cniplugins/internal/plugin"
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
	for _, t := range targets {
		s := op.stickyStore(t, claim, st)
		stores = append(stores, s)
		var a allocated
		err := s.requireSource(t)
		switch {
		case err != nil:
		case st != nil:
			a.addr, a.gw, err = alloc.AllocateClaimed(s, att, op.node, t, st.key, st.migration, op.now)
		default:
			a.addr, a.gw, err = t.Allocator(s).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
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
