package ipamconf

import (
	"net/netip"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/netconf"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// PrevAddrs are the addresses in conf's prevResult: what CHECK verifies
// and what DEL goes straight to.
func PrevAddrs(conf *netconf.Envelope) ([]netip.Addr, error) {
	prev, err := conf.Result()
	if err != nil || prev == nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(prev.IPs))
	for _, ip := range prev.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// Choices are the sets of pools prevResult says a selector can choose
// among (prevResult.choices), what Config.Status judges; nil when c is
// not in pool mode.
func Choices(conf *netconf.Envelope, c *alloc.Config) ([][]string, error) {
	if !c.PoolMode() {
		return nil, nil
	}
	return pool.ChoicesFromPrevResult(conf, c.Pools)
}
