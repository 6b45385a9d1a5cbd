// Package daetcd is ipam-da-etcd: the allocation engine of internal/alloc
// (ipam-da-pools' inputs and rules) with its state in an etcd cluster
// instead of local files, so that hosts sharing one subnet (macvlan or
// ipvlan on a LAN, overlays, routed pod networks) never hand out one
// address twice. Same inputs as ipam-da-pools; one key per address,
// claimed by a create-if-absent transaction; no lock, no lease on a
// claim, no per-pool document. This package is the CNI personality only:
// ipamconf parses the request and runs the commands over the store
// (internal/etcdstore), which holds everything that reads and writes
// etcd. It is part of the full flavour only: the store links net/http.
package daetcd

import (
	"net/netip"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ipamconf"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// Name is the personality's name.
const Name = "ipam-da-etcd"

// Personality returns ipam-da-etcd. Its `cniplugins validate` check
// reads ipam.etcd without etcd or the host name.
func Personality() plugin.Personality {
	return ipamconf.Personality(Name, "allocates one address per selected pool (or range set) from an etcd cluster shared by many hosts",
		open, etcdstore.CheckConfig)
}

// store is the store's operation on behalf of the request's attachment
// to c's network.
type store struct {
	*etcdstore.Operation
	c *alloc.Config
}

func open(req *plugin.Request, c *alloc.Config) (ipamconf.Store, error) {
	op, err := etcdstore.Open(req.Conf, c.Network, req.Args.ContainerID, req.Args.IfName, req.Now, req.Log)
	return store{op, c}, err
}

func (s store) Add(targets []alloc.Target, keyed alloc.Keyed) ([]*current.IPConfig, error) {
	return s.Operation.Add(targets, s.c.Quota, keyed)
}

func (s store) Del(hints []netip.Addr, keyed *alloc.Keyed) error {
	return s.Operation.Del(s.c, hints, keyed)
}

// GC has no attachment: the operation's is empty.
func (s store) GC(valid []alloc.Attachment) error { return s.Operation.GC(s.c.Scopes(), valid) }
