package daetcd

import (
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cmdStatus answers alloc's verdict over the range sets or pools of this
// network that etcd marks exhausted (etcdstore.Operation.Exhausted): 50
// only when no ADD could be served, or when etcd has no quorum.
func cmdStatus(req *plugin.Request) error {
	c, op, targets, err := begin(req, true)
	if err != nil {
		return err
	}
	exhausted, err := op.Exhausted(targets)
	if err != nil {
		return err
	}
	choices, err := ipamconf.Choices(req.Conf, c)
	if err != nil {
		return err
	}
	return c.Status(targets, choices, exhausted)
}
