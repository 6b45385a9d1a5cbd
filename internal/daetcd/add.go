package daetcd

import (
	"errors"
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
	claim := newClaimID()
	att := alloc.Attachment{ContainerID: op.cid, IfName: op.ifname, Network: op.network}
	var stores []*claimStore
	for _, t := range targets {
		s := op.stickyStore(t, claim, st)
		stores = append(stores, s)
		addr, gw, err := s.allocate(t, att)
		if err != nil {
			op.cl.Extend()
			if cerr := op.cancel(stores); cerr != nil {
				req.Log.Error("undoing the failed ADD's claims failed; the runtime's DEL or GC will remove them",
					logging.Error(cerr))
			}
			return nil, err
		}
		res.IPs = append(res.IPs, alloc.IPConfig(addr, gw))
		req.Log.Debug("allocated", logging.String("target", t.Label), logging.Stringer("address", addr))
	}
	return res, nil
}

// allocate runs the engine on one target. A sticky key's hold ends the
// search (holdFound); the shared rules then name the address to take
// over, or allocation starts again as usual once the hold is gone, or
// the ADD fails with 105 or 101 (sticky.go).
func (s *claimStore) allocate(t alloc.Target, att alloc.Attachment) (netip.Prefix, netip.Addr, error) {
	requested := t.Requested
	for try := 0; ; try++ {
		addr, gw, err := t.Allocator(s).Allocate(att, t.RangeID, t.Set, requested, t.Label)
		var hf *holdFound
		if !errors.As(err, &hf) {
			return addr, gw, err
		}
		if try == 8 {
			return netip.Prefix{}, netip.Addr{}, errTooManyHolds(t.Label)
		}
		if requested, err = s.decide(hf, t.Requested); err != nil {
			return netip.Prefix{}, netip.Addr{}, err
		}
	}
}
