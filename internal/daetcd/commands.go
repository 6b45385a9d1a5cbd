package daetcd

import (
	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// begin is how every command but DEL (cmdDel) starts: the engine's
// parse of the config, then ipam.etcd and the store's operation on behalf
// of the request's attachment. ADD, CHECK and STATUS needRanges: the targets they place
// addresses in come with them, requests assigned.
func begin(req *plugin.Request, needRanges bool) (*alloc.Config, *etcdstore.Operation, []alloc.Target, error) {
	c, err := ipamconf.Parse(req.Conf, req.CNIArgs, needRanges)
	if err != nil {
		return nil, nil, nil, err
	}
	op, err := open(req, c)
	if err != nil || !needRanges {
		return c, op, nil, err
	}
	targets, err := c.AddTargets()
	return c, op, targets, err
}

// open is the store's operation on behalf of the request's attachment
// to c's network.
func open(req *plugin.Request, c *alloc.Config) (*etcdstore.Operation, error) {
	return etcdstore.Open(req.Conf, c.Network, req.Args.ContainerID, req.Args.IfName, req.Now, req.Log)
}

// cmdAdd hands out one address per target, all or nothing
// (etcdstore.Operation.Add), and prints them.
func cmdAdd(req *plugin.Request) (types.Result, error) {
	c, op, targets, err := begin(req, true)
	if err != nil {
		return nil, err
	}
	res, err := c.NewResult()
	if err != nil {
		return nil, err
	}
	if res.IPs, err = op.Add(targets, c.Quota, req.Conf, req.CNIArgs); err != nil {
		return nil, err
	}
	return res, nil
}

// cmdDel releases everything the attachment holds in the scopes the
// config touches (etcdstore.Operation.Del). It needs no ranges, and
// parses the config once for both its paths (ipamconf.ParseDel).
func cmdDel(req *plugin.Request) error {
	c, err := ipamconf.ParseDel(req.Conf, req.CNIArgs)
	if err != nil {
		return err
	}
	op, err := open(req, c)
	if err != nil {
		return err
	}
	return op.Del(c, req.Conf, req.CNIArgs)
}

// cmdCheck verifies that every address in prevResult is this
// attachment's (etcdstore.Operation.Check).
func cmdCheck(req *plugin.Request) error {
	_, op, targets, err := begin(req, true)
	if err != nil {
		return err
	}
	addrs, err := ipamconf.PrevAddrs(req.Conf)
	if err != nil {
		return err
	}
	return op.Check(addrs, targets)
}

// cmdGC (spec 1.1) releases this node's claims of this network whose
// attachment is not in cni.dev/valid-attachments
// (etcdstore.Operation.GC).
func cmdGC(req *plugin.Request) error {
	c, op, _, err := begin(req, false) // GC has no attachment: op's is empty
	if err != nil {
		return err
	}
	valid, err := ipamconf.ValidAttachments(req.Conf)
	if err != nil {
		return err
	}
	return op.GC(c.Scopes(), valid)
}
