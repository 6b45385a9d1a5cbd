package ipamconf

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/netconf"
)

// maxRequested bounds requested addresses: one per range set or pool is
// all that can be served.
const maxRequested = 64

// requestedAddrs gathers the addresses asked for outside Pool objects, in
// a fixed order (CNI_ARGS IP, args.cni.ips, runtimeConfig.ips) so matching
// them to range sets never depends on map order. Duplicates collapse.
func requestedAddrs(cniArgs []netconf.CNIArg, extra netArgs) ([]netip.Addr, error) {
	var out []netip.Addr
	add := func(field, s string) error {
		a, err := parseAddrOrCIDR(s)
		if err != nil {
			if field == "CNI_ARGS" {
				return cnierr.InvalidEnv("CNI_ARGS", "IP="+s, "not an IP address")
			}
			return cnierr.InvalidConfig(field, s, "not an IP address")
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
		if len(out) > maxRequested {
			return cnierr.InvalidConfig(field, len(out), fmt.Sprintf("at most %d requested addresses", maxRequested))
		}
		return nil
	}
	if v, ok := netconf.Lookup(cniArgs, argIP); ok && v != "" {
		for _, s := range strings.Split(v, ",") {
			if err := add("CNI_ARGS", strings.TrimSpace(s)); err != nil {
				return nil, err
			}
		}
	}
	for i, s := range extra.Args.CNI.IPs {
		if err := add(fmt.Sprintf("args.cni.ips[%d]", i), s); err != nil {
			return nil, err
		}
	}
	for i, s := range extra.RuntimeConfig.IPs {
		if err := add(fmt.Sprintf("runtimeConfig.ips[%d]", i), s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseAddrOrCIDR accepts "10.1.2.3" and, as the ips capability sends it,
// "10.1.2.3/24".
func parseAddrOrCIDR(s string) (netip.Addr, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Addr().Unmap(), err
	}
	a, err := netip.ParseAddr(s)
	if err == nil && a.Zone() != "" {
		err = fmt.Errorf("zone not allowed")
	}
	return a.Unmap(), err
}
