package daetcd

import (
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
	claim := newClaimID()
	att := alloc.Attachment{ContainerID: op.cid, IfName: op.ifname, Network: op.network}
	var stores []*claimStore
	for _, t := range targets {
		s := op.claimStore(t, claim)
		stores = append(stores, s)
		addr, gw, err := t.Allocator(s).Allocate(att, t.RangeID, t.Set, t.Requested, t.Label)
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
