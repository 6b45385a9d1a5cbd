package alloc

import (
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// maxRangeSets bounds the range sets of one attachment (the legacy
// top-level range counts): each costs an address and a claim per ADD, and
// no real attachment needs more. Pools have the same bound,
// pool.MaxPerAttachment.
const maxRangeSets = pool.MaxPerAttachment

// Config is what an allocation asks for, validated (internal/ipamconf
// reads it from the CNI input).
type Config struct {
	Network    string
	Routes     []*types.Route
	ResolvConf string

	// RangeSets are the standalone range sets (host-local mode); nil in
	// pool mode, and when the ranges were not asked for.
	RangeSets []addrspace.RangeSet
	// Pools are the pools selected by prevResult.pools; nil standalone.
	Pools []pool.Pool
	// Quota is the selection's tenant quota (prevResult.quota); nil none.
	Quota *pool.Quota
	// PoolDefs are ipam.poolDefinitions: names and chains validated,
	// each entry's ranges when a command first needs them.
	PoolDefs *pool.Definitions
	// Requested are the addresses asked for outside Pool objects, in
	// order: CNI_ARGS IP, args.cni.ips, runtimeConfig.ips.
	Requested []netip.Addr
}

// PoolMode reports whether a selector's prevResult.pools drives the
// allocation.
func (c *Config) PoolMode() bool { return c.Pools != nil }

// Attachment is who holds an ADD's addresses in a store kept per range
// set's network or per pool (the disk's, the in-memory one): in pool mode
// it names the network too, a pool's state being shared by networks.
func (c *Config) Attachment(containerID, ifname string) Attachment {
	a := Attachment{ContainerID: containerID, IfName: ifname}
	if c.PoolMode() {
		a.Network = c.Network
	}
	return a
}
