package alloc

import "net/netip"

// ScopeState is what one scope holds, as `pools` counts it, whichever
// store it was read from (a state directory, or etcd's claim keys).
type ScopeState struct {
	// Place is where it was read: the directory, or the claims' key
	// prefix in etcd (`pools -o json`'s "dir").
	Place string
	// Addrs are the reserved addresses, any owner (sticky holds too).
	Addrs []netip.Addr
	// Held are the addresses sticky keys hold with no container;
	// Migrating those a live migration's two owners share.
	Held, Migrating []netip.Addr
	// Full lists the range sets (a pool: 0) an ADD found full with
	// nothing freed since: what STATUS reads.
	Full []int
	// Tenants maps each address counted for a quota's tenant to the
	// tenant (a pool's only).
	Tenants map[netip.Addr]string
}
