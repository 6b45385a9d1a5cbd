package alloc

import (
	"net/netip"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// assignRequests gives each target without its own request the first
// unused requested address inside its range set, in target order. An
// address that fits no target is code 101: it cannot be honoured.
func assignRequests(targets []Target, requested []netip.Addr) error {
	if left := assign(targets, requested); left != "" {
		return cnierr.New(cnierr.CodeAddrUnavailable, "requested address is in no selected range set", "%s", left)
	}
	return nil
}

// RequestPools is assignRequests over Pool objects: each address becomes
// the requested-ip of the pool an ADD would give it to, so that a
// selector placing its own requests (ipam-ds-args' cniplugins.io/ip)
// hands the allocator what the allocator would decide. A pool with
// neither ranges nor an entry in defs holds none. from names the requests
// in 101's details.
func RequestPools(pools []pool.Pool, defs *pool.Definitions, requested []netip.Addr, from string) error {
	targets := make([]Target, len(pools))
	for i, p := range pools {
		field := "pools[" + p.Name + "]"
		src, _, err := PoolSource(p, field, defs)
		if err != nil {
			return err
		}
		if targets[i].Requested, err = p.Requested(field); err != nil {
			return err
		}
		targets[i].Set = src.Set
	}
	if left := assign(targets, requested); left != "" {
		return cnierr.New(cnierr.CodeAddrUnavailable, "requested address is in no selected pool that requests none yet",
			"%s=%s; selected pools [%s] (one address per pool)", from, left, strings.Join(pool.Names(pools), " "))
	}
	for i, t := range targets {
		if pools[i].RequestedIP == "" && t.Requested.IsValid() {
			pools[i].RequestedIP = t.Requested.String()
		}
	}
	return nil
}

// assign is assignRequests' rule; left lists the addresses no target
// took, comma separated.
func assign(targets []Target, requested []netip.Addr) (left string) {
	used := make([]bool, len(requested))
	for i := range targets {
		if targets[i].Requested.IsValid() {
			continue
		}
		for j, a := range requested {
			if !used[j] && targets[i].Set.Contains(a) {
				targets[i].Requested, used[j] = a, true
				break
			}
		}
	}
	var out []string
	for j, a := range requested {
		if !used[j] && !isPoolRequest(targets, a) {
			out = append(out, a.String())
		}
	}
	return strings.Join(out, ",")
}

// isPoolRequest: a global request equal to a Pool object's own request is
// the same wish said twice, not an unserved one.
func isPoolRequest(targets []Target, a netip.Addr) bool {
	for _, t := range targets {
		if t.Requested == a {
			return true
		}
	}
	return false
}
