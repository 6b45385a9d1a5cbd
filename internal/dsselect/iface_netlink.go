package dsselect

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// netlinkHost reads the network namespace the process runs in (the plugin
// never switches namespaces) with rtnetlink dumps.
//
// It speaks through netlink's message layer (package nl) rather than the
// netlink package itself: the latter builds dozens of lookup maps at
// package init, which every personality of this binary would pay on every
// exec (GODEBUG=inittrace=1: +41 allocations, +5 KB), for three requests
// this file makes with a few lines of parsing.
type netlinkHost struct{}

// dumpRetries bounds the re-reads of a dump the kernel reports as
// interrupted (the table changed while it was being read).
const dumpRetries = 3

func (netlinkHost) LinkByName(name string) (hostLink, bool, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	return getLink(req)
}

func (netlinkHost) LinkByIndex(index int) (hostLink, bool, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	return getLink(req)
}

func getLink(req *nl.NetlinkRequest) (hostLink, bool, error) {
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	switch {
	case errors.Is(err, unix.ENODEV):
		return hostLink{}, false, nil
	case err != nil:
		return hostLink{}, false, err
	case len(msgs) != 1 || len(msgs[0]) < unix.SizeofIfInfomsg:
		return hostLink{}, false, fmt.Errorf("RTM_GETLINK: %d answers", len(msgs))
	}
	info := nl.DeserializeIfInfomsg(msgs[0])
	attrs, err := nl.ParseRouteAttr(msgs[0][unix.SizeofIfInfomsg:])
	if err != nil {
		return hostLink{}, false, err
	}
	l := hostLink{Index: int(info.Index)}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_IFNAME {
			l.Name = unix.ByteSliceToString(a.Value)
		}
	}
	return l, true, nil
}

func (netlinkHost) Addrs(l hostLink) ([]hostAddr, error) {
	msgs, err := dump(unix.RTM_GETADDR, nl.NewIfAddrmsg(unix.AF_UNSPEC), unix.RTM_NEWADDR)
	if err != nil {
		return nil, err
	}
	var out []hostAddr
	for _, m := range msgs {
		if len(m) < unix.SizeofIfAddrmsg {
			continue
		}
		msg := nl.DeserializeIfAddrmsg(m)
		if int(msg.Index) != l.Index {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[unix.SizeofIfAddrmsg:])
		if err != nil {
			return nil, err
		}
		// IFA_LOCAL is the host's own address; IFA_ADDRESS is the same
		// except on point-to-point links, where it is the peer's.
		var local, addr netip.Addr
		for _, a := range attrs {
			switch a.Attr.Type {
			case unix.IFA_LOCAL:
				local = attrAddr(a)
			case unix.IFA_ADDRESS:
				addr = attrAddr(a)
			}
		}
		if local.IsValid() {
			addr = local
		}
		if addr.IsValid() {
			out = append(out, hostAddr{Prefix: netip.PrefixFrom(addr, int(msg.Prefixlen)), Global: msg.Scope == unix.RT_SCOPE_UNIVERSE})
		}
	}
	return out, nil
}

func (netlinkHost) DefaultRoutes() ([]hostRoute, error) {
	var out []hostRoute
	for _, fam := range []struct{ af, family int }{{unix.AF_INET, 4}, {unix.AF_INET6, 6}} {
		rt := nl.NewRtMsg()
		rt.Family = uint8(fam.af)
		msgs, err := dump(unix.RTM_GETROUTE, rt, unix.RTM_NEWROUTE)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			routes, err := defaultRoute(m, fam.af, fam.family)
			if err != nil {
				return nil, err
			}
			out = append(out, routes...)
		}
	}
	return out, nil
}

// defaultRoute decodes one route message into its next hops if it is a
// unicast default route of the main table.
func defaultRoute(m []byte, af, family int) ([]hostRoute, error) {
	if len(m) < unix.SizeofRtMsg {
		return nil, nil
	}
	msg := nl.DeserializeRtMsg(m)
	if int(msg.Family) != af || msg.Dst_len != 0 || msg.Table != unix.RT_TABLE_MAIN ||
		msg.Type != unix.RTN_UNICAST || msg.Flags&unix.RTM_F_CLONED != 0 {
		return nil, nil
	}
	attrs, err := nl.ParseRouteAttr(m[msg.Len():])
	if err != nil {
		return nil, err
	}
	r := hostRoute{Family: family}
	var hops []hostRoute
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.RTA_OIF:
			r.LinkIndex = int(nl.NativeEndian().Uint32(a.Value))
		case unix.RTA_GATEWAY:
			r.Gateway = attrAddr(a)
		case unix.RTA_PRIORITY:
			r.Metric = int(nl.NativeEndian().Uint32(a.Value))
		case unix.RTA_MULTIPATH:
			if hops, err = nextHops(a.Value, family); err != nil {
				return nil, err
			}
		}
	}
	if len(hops) == 0 {
		return []hostRoute{r}, nil
	}
	for i := range hops {
		hops[i].Metric = r.Metric
	}
	return hops, nil
}

// nextHops decodes RTA_MULTIPATH: rtnexthop headers, each followed by its
// own attributes.
func nextHops(b []byte, family int) ([]hostRoute, error) {
	var out []hostRoute
	for len(b) >= unix.SizeofRtNexthop {
		hop := nl.DeserializeRtNexthop(b)
		n := int(hop.RtNexthop.Len)
		if n < unix.SizeofRtNexthop || n > len(b) {
			return nil, fmt.Errorf("RTA_MULTIPATH: bad next hop length %d", n)
		}
		attrs, err := nl.ParseRouteAttr(b[unix.SizeofRtNexthop:n])
		if err != nil {
			return nil, err
		}
		r := hostRoute{Family: family, LinkIndex: int(hop.Ifindex)}
		for _, a := range attrs {
			if a.Attr.Type == unix.RTA_GATEWAY {
				r.Gateway = attrAddr(a)
			}
		}
		out = append(out, r)
		b = b[min(len(b), (n+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
	}
	return out, nil
}

func attrAddr(a syscall.NetlinkRouteAttr) netip.Addr {
	ip, _ := netip.AddrFromSlice(a.Value)
	return ip.Unmap()
}

// dump runs a dump request, again while the kernel reports it interrupted.
func dump(proto int, msg nl.NetlinkRequestData, resType uint16) ([][]byte, error) {
	var (
		msgs [][]byte
		err  error
	)
	for range dumpRetries {
		req := nl.NewNetlinkRequest(proto, unix.NLM_F_DUMP)
		req.AddData(msg)
		if msgs, err = req.Execute(unix.NETLINK_ROUTE, resType); !errors.Is(err, nl.ErrDumpInterrupted) {
			break
		}
	}
	return msgs, err
}
