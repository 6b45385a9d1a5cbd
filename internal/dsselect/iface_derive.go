package dsselect

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/cniplugins/cniplugins/internal/cnierr"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// derive builds one Pool object per family from what the host holds: the
// subnet of the link's first global address of that family, the next hop
// of the default route over that link as gateway, and as exclusions the
// addresses the host holds on the link inside that subnet, the gateway and
// the configured exclude.
func derive(h hostNet, s *ifaceSpec) ([]pool.Pool, error) {
	var named hostLink
	if s.link != defaultLink {
		link, found, err := h.LinkByName(s.link)
		switch {
		case err != nil:
			return nil, netlinkErr("look up link "+s.link, err)
		case !found:
			return nil, cnierr.InvalidConfig("ipam.interface", s.link, "no such link in this network namespace")
		}
		named = link
	}
	routes, err := h.DefaultRoutes()
	if err != nil {
		return nil, netlinkErr("list default routes", err)
	}
	addrs := map[int][]hostAddr{} // by link index: "default" may name one link twice
	var out []pool.Pool
	for _, fam := range s.wanted() {
		link, gw := named, netip.Addr{}
		if s.link == defaultLink {
			var ok bool
			if link, gw, ok, err = defaultLinkFor(h, fam, routes, s.families != nil); err != nil {
				return nil, err
			}
			if !ok {
				continue // no default route of a family not asked for by name
			}
		} else if r, ok := bestDefault(routes, fam, link.Index); ok {
			gw = r.Gateway
		}
		if _, done := addrs[link.Index]; !done {
			if addrs[link.Index], err = h.Addrs(link); err != nil {
				return nil, netlinkErr("list addresses of "+link.Name, err)
			}
		}
		p, ok, err := s.poolFor(fam, link, addrs[link.Index], gw)
		if err != nil {
			return nil, err
		}
		if !ok {
			if s.families != nil {
				return nil, noAddress(link.Name, fmt.Sprint(fam))
			}
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		if s.link == defaultLink {
			return nil, cnierr.New(cnierr.CodeTryAgainLater, "no default route with a global address on its link", "interface=default families=4,6")
		}
		return nil, noAddress(s.link, "4 or 6")
	}
	return out, nil
}

// defaultLinkFor finds the link holding the family's preferred default
// route, and the route's next hop. ok is false when the family has no
// default route and was not asked for by name (wanted is false).
func defaultLinkFor(h hostNet, fam int, routes []hostRoute, wanted bool) (hostLink, netip.Addr, bool, error) {
	r, found := bestDefault(routes, fam, 0)
	if !found {
		if wanted {
			return hostLink{}, netip.Addr{}, false, cnierr.New(cnierr.CodeTryAgainLater, "no default route of a wanted family", "interface=default family=%d", fam)
		}
		return hostLink{}, netip.Addr{}, false, nil
	}
	link, found, err := h.LinkByIndex(r.LinkIndex)
	switch {
	case err != nil:
		return hostLink{}, netip.Addr{}, false, netlinkErr(fmt.Sprintf("look up link %d", r.LinkIndex), err)
	case !found: // the link went away since the route dump
		return hostLink{}, netip.Addr{}, false, cnierr.New(cnierr.CodeTryAgainLater, "default route's link disappeared", "interface=default family=%d index=%d", fam, r.LinkIndex)
	}
	return link, r.Gateway, true, nil
}

// bestDefault is the family's default route the kernel prefers (lowest
// metric, first listed on a tie), over link index when index is not 0.
func bestDefault(routes []hostRoute, fam, index int) (hostRoute, bool) {
	var best hostRoute
	found := false
	for _, r := range routes {
		if r.Family != fam || (index != 0 && r.LinkIndex != index) {
			continue
		}
		if !found || r.Metric < best.Metric {
			best, found = r, true
		}
	}
	return best, found
}

// poolFor builds the family's Pool from the link's addresses; ok is false
// when the link has no global address of the family.
func (s *ifaceSpec) poolFor(fam int, link hostLink, addrs []hostAddr, gw netip.Addr) (pool.Pool, bool, error) {
	var subnet netip.Prefix
	for _, a := range addrs {
		if a.Global && a.Prefix.Addr().Is4() == (fam == 4) {
			subnet = a.Prefix.Masked()
			break
		}
	}
	if !subnet.IsValid() {
		return pool.Pool{}, false, nil
	}
	// The host's own addresses; those outside the subnet (link-local
	// ones, a second subnet on the link) cannot be handed out from it
	// anyway.
	var own []string
	for _, a := range addrs {
		if subnet.Contains(a.Prefix.Addr()) {
			own = append(own, a.Prefix.Addr().String())
		}
	}
	if subnet.Bits() > subnet.Addr().BitLen()-2 {
		return pool.Pool{}, false, cnierr.InvalidConfig("ipam.interface", link.Name,
			fmt.Sprintf("its IPv%d subnet %s is too small to allocate from", fam, subnet))
	}
	p := pool.Pool{Name: s.poolName(fam), Subnet: subnet.String(),
		RangeStart: s.ranges[fam].RangeStart, RangeEnd: s.ranges[fam].RangeEnd}
	exclude := own
	// A next hop outside the subnet (an IPv6 router's link-local address)
	// cannot be the pool's gateway; the allocator then keeps its default.
	if gw.IsValid() && subnet.Contains(gw) {
		p.Gateway = gw.String()
		exclude = append(exclude, p.Gateway)
	}
	for _, e := range append(exclude, s.exclude...) {
		if !slices.Contains(p.Exclude, e) {
			p.Exclude = append(p.Exclude, e)
		}
	}
	// rangeStart/rangeEnd must lie in the subnet the host has today.
	if _, _, err := p.InlineRanges(fmt.Sprintf("ipam.familyRanges.%d", fam)); err != nil {
		return pool.Pool{}, false, err
	}
	return p, true, nil
}

func noAddress(link, family string) error {
	return cnierr.New(cnierr.CodeTryAgainLater, "interface has no global address of a wanted family", "interface=%s family=%s", link, family)
}

func netlinkErr(what string, err error) error {
	return cnierr.Wrap(cnierr.New(cnierr.CodeIO, "netlink request failed", "%s: %v", what, err), err)
}
