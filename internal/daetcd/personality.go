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

// open is the store's operation on behalf of the request's attachment
// to c's network: etcdstore.Operation is an ipamconf.Store.
func open(req *plugin.Request, c *alloc.Config) (ipamconf.Store, error) {
	return etcdstore.Open(req.Conf, c, req.Args.ContainerID, req.Args.IfName, req.Now, req.Log)
}
