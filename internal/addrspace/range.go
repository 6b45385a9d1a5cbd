package addrspace

import (
	"fmt"
	"net/netip"
	"strings"
)

// RangeConfig is one entry of host-local's "ranges" array as it appears in
// JSON. The keys are host-local's so that configs written for it decode
// unchanged.
type RangeConfig struct {
	Subnet     string `json:"subnet"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
}

// Range is a canonicalised RangeConfig: every field set, every address in
// Subnet's family, Start and End inside Subnet, Start <= End. The gateway
// may lie outside Subnet.
type Range struct {
	Subnet  netip.Prefix
	Start   netip.Addr
	End     netip.Addr
	Gateway netip.Addr
}

// Canonicalize validates c and fills host-local's defaults (gateway and
// rangeStart = network+1, rangeEnd = last usable address). It accepts what
// host-local accepts, so that a host-local conflist migrates unchanged: a
// gateway outside the subnet (routed and L3 set-ups use one such as
// 169.254.1.1), rangeStart on the network address and rangeEnd on the IPv4
// broadcast address. Those two addresses stay in the range (overlap rules
// and the round-robin cursor see what host-local sees) but are never
// handed out; Warning tells the operator. Start > end is refused.
// field prefixes the config path named in errors (e.g. "ranges[0][1]").
func (c RangeConfig) Canonicalize(field string) (Range, error) {
	subnet, err := parseSubnet(field+".subnet", c.Subnet)
	if err != nil {
		return Range{}, err
	}
	network := subnet.Addr()
	last := lastAddr(subnet)
	// host-local never hands out the IPv4 broadcast address.
	usableEnd := last
	if network.Is4() {
		usableEnd = last.Prev()
	}
	r := Range{Subnet: subnet, Start: network.Next(), End: usableEnd, Gateway: network.Next()}

	if c.Gateway != "" {
		if r.Gateway, err = parseAddr(field+".gateway", c.Gateway, subnet); err != nil {
			return Range{}, err
		}
	}
	if c.RangeStart != "" {
		if r.Start, err = parseInSubnet(field+".rangeStart", c.RangeStart, subnet); err != nil {
			return Range{}, err
		}
	}
	if c.RangeEnd != "" {
		if r.End, err = parseInSubnet(field+".rangeEnd", c.RangeEnd, subnet); err != nil {
			return Range{}, err
		}
	}
	if r.Start.Compare(r.End) > 0 {
		return Range{}, invalid(field+".rangeEnd", r.End.String(), fmt.Sprintf("is before rangeStart %s", r.Start))
	}
	return r, nil
}

// parseSubnet accepts a CIDR naming a network (no host bits) large enough
// to hold at least two addresses besides the network (and, for IPv4,
// broadcast) address — host-local's "too small to allocate from" rule.
func parseSubnet(field, s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, missing(field)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, invalid(field, s, "not a valid CIDR")
	}
	// host-local refuses an IPv4-mapped IPv6 subnet (its address and mask
	// lengths disagree); taking it as the IPv4 network would hand out
	// addresses from a network the config never named that way.
	if p.Addr().Is4In6() {
		return netip.Prefix{}, invalid(field, s, "is an IPv4-mapped IPv6 subnet; write the IPv4 network")
	}
	if p.Masked() != p {
		return netip.Prefix{}, invalid(field, s, fmt.Sprintf("has host bits set, network is %s", p.Masked()))
	}
	if p.Bits() > p.Addr().BitLen()-2 {
		return netip.Prefix{}, invalid(field, s, "too small to allocate from")
	}
	return p, nil
}

// parseAddr parses an address of subnet's family. Unlike host-local it
// refuses the other family: an IPv6 gateway in an IPv4 result is nothing
// an interface plugin can configure.
func parseAddr(field, s string, subnet netip.Prefix) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, invalid(field, s, "not a valid IP address")
	}
	a = a.Unmap()
	if a.Is4() != subnet.Addr().Is4() {
		return netip.Addr{}, invalid(field, s, fmt.Sprintf("address family differs from subnet %s", subnet))
	}
	return a, nil
}

// parseInSubnet parses an address that must belong to subnet.
func parseInSubnet(field, s string, subnet netip.Prefix) (netip.Addr, error) {
	a, err := parseAddr(field, s, subnet)
	if err != nil {
		return netip.Addr{}, err
	}
	if !subnet.Contains(a) {
		return netip.Addr{}, invalid(field, s, fmt.Sprintf("not in subnet %s", subnet))
	}
	return a, nil
}

// LastAddr is the highest address of p (for IPv4, the broadcast address).
func LastAddr(p netip.Prefix) netip.Addr { return lastAddr(p.Masked()) }

// lastAddr is the highest address of p (the IPv4 broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		hostBits := max(0, min(8, (i+1)*8-p.Bits()))
		b[i] |= byte(1<<hostBits - 1)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Contains reports whether a lies in r's allocation range; host-local's
// Range.Contains, used by both the iterator and the overlap rule.
func (r Range) Contains(a netip.Addr) bool {
	a = a.Unmap()
	return r.Subnet.Contains(a) && r.Start.Compare(a) <= 0 && a.Compare(r.End) <= 0
}

// Usable reports whether a, an address of r, may be handed out: never the
// subnet's network address nor its IPv4 broadcast address, which only a
// range that starts or ends on them contains (host-local hands them out).
func (r Range) Usable(a netip.Addr) bool {
	if a != r.Start && a != r.End {
		return true
	}
	return a != r.Subnet.Addr() && !(a.Is4() && a == lastAddr(r.Subnet))
}

// Warning says which of r's addresses are never handed out although its
// config includes them; "" when none.
func (r Range) Warning() string {
	var out []string
	if r.Start == r.Subnet.Addr() {
		out = append(out, fmt.Sprintf("rangeStart %s is the network address of %s", r.Start, r.Subnet))
	}
	if r.End.Is4() && r.End == lastAddr(r.Subnet) {
		out = append(out, fmt.Sprintf("rangeEnd %s is the broadcast address of %s", r.End, r.Subnet))
	}
	return strings.Join(out, "; ")
}

// overlaps is host-local's rule: either range contains one of the other's
// end points. Ranges of different families never overlap.
func (r Range) overlaps(o Range) bool {
	return r.Contains(o.Start) || r.Contains(o.End) || o.Contains(r.Start) || o.Contains(r.End)
}

// String is host-local's "start-end" form, used in error details.
func (r Range) String() string { return r.Start.String() + "-" + r.End.String() }
