package dockeripam

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/logging"
)

// RequestPool binds a Docker network to a pool: a defined one (by
// --ipam-opt cniplugins.pool=NAME or an equal subnet), else one of the
// driver's own for the requested subnet, else a free subnet from the
// default address pools. An identical request returns the same PoolID and
// takes another reference.
func (d *Driver) RequestPool(r RequestPoolRequest) (RequestPoolResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := checkSpace(r.AddressSpace); err != nil {
		return RequestPoolResponse{}, err
	}
	b, err := d.bind(r)
	if err != nil {
		return RequestPoolResponse{}, err
	}
	id := b.id()
	err = d.update(func(s *state) {
		if p, ok := s.Pools[id]; ok {
			p.Refs++
			return
		}
		s.Pools[id] = &poolState{Pool: b.pool, Subnet: b.subnet.String(), SubPool: subPoolString(b.subPool), Own: b.own, Refs: 1}
	})
	if err != nil {
		return RequestPoolResponse{}, err
	}
	d.log.Info("pool requested", logging.String("poolID", id), logging.Int("refs", d.st.Pools[id].Refs))
	return RequestPoolResponse{PoolID: id, Pool: b.subnet.String(), Data: map[string]string{}}, nil
}

// ReleasePool drops one reference; at zero the pool is forgotten and any
// reservation the driver still holds in it is freed (dockerd releases
// addresses before pools, so there should be none).
func (d *Driver) ReleasePool(r ReleasePoolRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.pool(r.PoolID)
	if err != nil {
		return err
	}
	if p.Refs > 1 {
		return d.update(func(s *state) { s.Pools[r.PoolID].Refs-- })
	}
	if err := d.releaseAll(r.PoolID, p.Pool); err != nil {
		return err
	}
	if err := d.update(func(s *state) { delete(s.Pools, r.PoolID) }); err != nil {
		return err
	}
	d.log.Info("pool released", logging.String("poolID", r.PoolID))
	return nil
}

func (d *Driver) releaseAll(id, pool string) error {
	disk, err := hostlocal.Open(d.poolDir(pool), d.cfg.LockTimeout)
	if err != nil {
		return err
	}
	held, err := disk.ByAttachment(attachment(id))
	if err == nil {
		_, err = alloc.Free(disk, attachment(id), held)
	}
	return errors.Join(err, disk.Close())
}

func checkSpace(space string) error {
	switch space {
	case LocalSpace, "":
		return nil
	case GlobalSpace:
		return fmt.Errorf("address space %s is not served: no cluster allocator yet; use the local address space", GlobalSpace)
	}
	return fmt.Errorf("unknown address space %q (this driver serves %s)", space, LocalSpace)
}

// binding is what a RequestPool resolves to.
type binding struct {
	pool    string       // pool directory name
	subnet  netip.Prefix // the subnet Docker sees
	subPool netip.Prefix // dynamic addresses only from here (zero: anywhere)
	own     bool
}

// id is the PoolID: whitespace-free (it is recorded as the interface name
// of the driver's reservations) and the same for identical requests.
func (b binding) id() string {
	id := b.pool + "," + b.subnet.String()
	if b.subPool.IsValid() {
		id += "," + b.subPool.String()
	}
	return id
}

func subPoolString(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.String()
}

func (d *Driver) bind(r RequestPoolRequest) (binding, error) {
	var b binding
	var err error
	if r.Pool != "" {
		if b.subnet, err = parseNetwork("Pool", r.Pool); err != nil {
			return binding{}, err
		}
		if b.subnet.Addr().Is6() != r.V6 {
			return binding{}, fmt.Errorf("pool %s: address family does not match V6=%t", r.Pool, r.V6)
		}
	}
	if name, ok := r.Options[PoolOption]; ok {
		if b, err = d.bindNamed(name, b.subnet, r.V6); err != nil {
			return binding{}, err
		}
	} else if b.subnet.IsValid() {
		if b, err = d.bindSubnet(b.subnet); err != nil {
			return binding{}, err
		}
	} else if b, err = d.bindFree(r.V6); err != nil {
		return binding{}, err
	}
	if r.SubPool != "" {
		if b.subPool, err = parseNetwork("SubPool", r.SubPool); err != nil {
			return binding{}, err
		}
		if !b.subnet.Contains(b.subPool.Addr()) || b.subPool.Bits() < b.subnet.Bits() {
			return binding{}, fmt.Errorf("SubPool %s is not inside pool %s", r.SubPool, b.subnet)
		}
		if rs, _ := d.ranges(b.pool, b.subnet, b.own); len(restrict(rs, b.subPool)) == 0 {
			return binding{}, fmt.Errorf("SubPool %s holds no allocatable address of pool %s", r.SubPool, b.pool)
		}
	}
	return b, nil
}

// bindNamed binds to the defined pool name; its subnet is the requested
// one, which must be one of the pool's, or the pool's first of that family.
func (d *Driver) bindNamed(name string, want netip.Prefix, v6 bool) (binding, error) {
	def, ok := d.cfg.Pools[name]
	if !ok {
		return binding{}, fmt.Errorf("%s=%s: no such pool in poolDefinitions (defined: %s)", PoolOption, name, strings.Join(slices.Sorted(maps.Keys(d.cfg.Pools)), ", "))
	}
	for _, r := range def.Set {
		if r.Subnet.Addr().Is6() != v6 {
			continue
		}
		if !want.IsValid() || r.Subnet == want {
			return binding{pool: name, subnet: r.Subnet}, nil
		}
	}
	if want.IsValid() {
		return binding{}, fmt.Errorf("pool %s has no range in subnet %s", name, want)
	}
	return binding{}, fmt.Errorf("pool %s has no IPv%s range", name, map[bool]string{false: "4", true: "6"}[v6])
}

// bindSubnet binds to the defined pool with a range in exactly subnet, or
// to an own pool for it when no definition comes near it.
func (d *Driver) bindSubnet(subnet netip.Prefix) (binding, error) {
	var matches []string
	for _, name := range slices.Sorted(maps.Keys(d.cfg.Pools)) {
		for _, r := range d.cfg.Pools[name].Set {
			switch {
			case r.Subnet == subnet:
				matches = append(matches, name)
			case r.Subnet.Overlaps(subnet):
				return binding{}, fmt.Errorf("pool %s overlaps defined pool %s (%s); use its subnet exactly or another one", subnet, name, r.Subnet)
			}
		}
	}
	matches = slices.Compact(matches)
	switch len(matches) {
	case 1:
		return binding{pool: matches[0], subnet: subnet}, nil
	case 0:
	default:
		return binding{}, fmt.Errorf("subnet %s is in several defined pools (%s); choose one with --ipam-opt %s=NAME", subnet, strings.Join(matches, ", "), PoolOption)
	}
	for _, used := range d.st.Pools {
		u, _ := netip.ParsePrefix(used.Subnet)
		if u.Overlaps(subnet) && u != subnet {
			return binding{}, fmt.Errorf("pool %s overlaps pool %s already in use", subnet, u)
		}
	}
	return binding{pool: ownPoolName(subnet), subnet: subnet, own: true}, nil
}

// bindFree picks the first subnet of the default address pools that
// overlaps no defined pool and no pool in use.
func (d *Driver) bindFree(v6 bool) (binding, error) {
	var taken []netip.Prefix
	for _, p := range d.st.Pools {
		if u, err := netip.ParsePrefix(p.Subnet); err == nil {
			taken = append(taken, u)
		}
	}
	for _, def := range d.cfg.Pools {
		for _, r := range def.Set {
			taken = append(taken, r.Subnet)
		}
	}
	for _, dp := range d.cfg.Defaults {
		if dp.base.Addr().Is6() != v6 {
			continue
		}
		for p := range subnets(dp.base, dp.size) {
			if !slices.ContainsFunc(taken, p.Overlaps) {
				return binding{pool: ownPoolName(p), subnet: p, own: true}, nil
			}
		}
	}
	return binding{}, fmt.Errorf("no free IPv%s subnet left in the default address pools", map[bool]string{false: "4", true: "6"}[v6])
}

// subnets yields base's subnets of size bits in order, no more than
// 65,536 of them (a /48 split into /64s).
func subnets(base netip.Prefix, size int) iter.Seq[netip.Prefix] {
	return func(yield func(netip.Prefix) bool) {
		p := netip.PrefixFrom(base.Addr(), size)
		for range 1 << min(size-base.Bits(), 16) {
			if !yield(p) {
				return
			}
			p = netip.PrefixFrom(addrspace.LastAddr(p).Next(), size)
		}
	}
}

// ownPoolName derives a pool name, valid under the pool-name rules, from
// a subnet: docker-10.222.3.0-24, docker-fd63.6e69.706c.0003.0000.0000.0000.0000-64.
func ownPoolName(p netip.Prefix) string {
	addr := p.Addr().String()
	if p.Addr().Is6() {
		addr = strings.ReplaceAll(p.Addr().StringExpanded(), ":", ".")
	}
	return fmt.Sprintf("docker-%s-%d", addr, p.Bits())
}

func parseNetwork(field, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%s %q: not a CIDR", field, s)
	}
	if p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%s %q: not a plain IPv4 or IPv6 network", field, s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%s %q: host bits set, the network is %s", field, s, p.Masked())
	}
	return p, nil
}

// ranges is the range set a Docker pool allocates from, and what it
// never hands out: the defined pool's ranges in the pool's subnet and its
// exclusions, or the whole subnet for an own pool.
func (d *Driver) ranges(pool string, subnet netip.Prefix, own bool) (addrspace.RangeSet, addrspace.Exclusions) {
	if own {
		r, err := addrspace.RangeConfig{Subnet: subnet.String()}.Canonicalize("Pool")
		if err != nil {
			return nil, addrspace.Exclusions{}
		}
		return addrspace.RangeSet{r}, addrspace.Exclusions{}
	}
	def := d.cfg.Pools[pool]
	var out addrspace.RangeSet
	for _, r := range def.Set {
		if r.Subnet == subnet {
			out = append(out, r)
		}
	}
	return out, def.Exclude
}

// restrict narrows rs to the addresses inside sub (--ip-range), keeping
// each range's subnet and gateway.
func restrict(rs addrspace.RangeSet, sub netip.Prefix) addrspace.RangeSet {
	if !sub.IsValid() {
		return rs
	}
	first, last := sub.Masked().Addr(), addrspace.LastAddr(sub)
	var out addrspace.RangeSet
	for _, r := range rs {
		start, end := r.Start, r.End
		if first.Compare(start) > 0 {
			start = first
		}
		if last.Compare(end) < 0 {
			end = last
		}
		if start.Compare(end) <= 0 {
			out = append(out, addrspace.Range{Subnet: r.Subnet, Start: start, End: end, Gateway: r.Gateway})
		}
	}
	return out
}
