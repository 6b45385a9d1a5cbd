package docker

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// --subnet/--gateway, a dynamic and a fixed address, a conflicting --ip,
// network rm, and the same subnet again.
func TestSubnetGatewayAndAddresses(t *testing.T) {
	needDocker(t)
	t.Parallel()
	const net, pool = "cnpd-sg", "docker-10.213.10.0-24"
	network(t, net, "--subnet", "10.213.10.0/24", "--gateway", "10.213.10.254")
	if cfg := ipamConfig(t, net); len(cfg) != 1 || cfg[0].Subnet != "10.213.10.0/24" || cfg[0].Gateway != "10.213.10.254" {
		t.Fatalf("IPAM config %+v", cfg)
	}
	if ps := poolsFor(t, "10.213.10.0/24"); len(ps) != 1 || ps[0].Refs != 1 {
		t.Fatalf("driver state for the subnet: %+v", ps)
	}
	if r := reservations(t, pool); !isDockers(r["10.213.10.254"]) {
		t.Fatalf("gateway not reserved for Docker: %q", r)
	}

	// Dynamic: what dockerd reports is what the driver reserved and what
	// the container has on eth0.
	c1 := runDetached(t, "cnpd-sg-1", "--network", net)
	ip1, _ := containerIPs(t, c1, net)
	if r := reservations(t, pool); !isDockers(r[ip1]) {
		t.Errorf("container address %s has no Docker reservation: %q", ip1, r)
	}
	if got := eth0(t, c1); !slices.Equal(got, []string{ip1 + "/24"}) {
		t.Errorf("eth0 holds %v, want %s/24", got, ip1)
	}

	// Fixed, and a second container asking for the same address.
	c2 := runDetached(t, "cnpd-sg-2", "--network", net, "--ip", "10.213.10.77")
	if got := eth0(t, c2); !slices.Equal(got, []string{"10.213.10.77/24"}) {
		t.Errorf("--ip container's eth0 holds %v", got)
	}
	if _, err := daemon.Run("run", "--rm", "--network", net, "--ip", "10.213.10.77", image, "true"); err == nil {
		t.Error("a second container got 10.213.10.77")
	} else if !strings.Contains(err.Error(), "already reserved") {
		t.Errorf("second --ip failed, but not with the driver's reason: %v", err)
	}
	if r := reservations(t, pool); !isDockers(r["10.213.10.77"]) {
		t.Errorf("the failed --ip freed the first holder's reservation: %q", r)
	}
	if got := eth0(t, c2); !slices.Equal(got, []string{"10.213.10.77/24"}) {
		t.Errorf("after the failed --ip, eth0 holds %v", got)
	}

	// docker run --rm: the address is on eth0 while it runs, free after.
	out := dk(t, "run", "--rm", "--network", net, image, "ip", "-o", "-4", "addr", "show", "eth0")
	if !strings.Contains(out, "inet 10.213.10.") {
		t.Errorf("run --rm: eth0 shows %q", out)
	}
	dk(t, "rm", "-f", c1, c2)
	if r := reservations(t, pool); len(r) != 1 {
		t.Errorf("after the containers went, pool holds %q, want only the gateway", r)
	}

	dk(t, "network", "rm", net)
	if r := reservations(t, pool); len(r) != 0 {
		t.Errorf("network rm left reservations %q", r)
	}
	if ps := poolsFor(t, "10.213.10.0/24"); len(ps) != 0 {
		t.Errorf("network rm left the pool in the driver's state: %+v", ps)
	}
	network(t, net, "--subnet", "10.213.10.0/24", "--gateway", "10.213.10.254")
	runDetached(t, "cnpd-sg-3", "--network", net)
}

// Without --subnet, the driver carves subnets from its default address
// pools, never the same twice.
func TestWithoutSubnet(t *testing.T) {
	needDocker(t)
	t.Parallel()
	network(t, "cnpd-ns1")
	network(t, "cnpd-ns2")
	base := netip.MustParsePrefix("10.213.128.0/20")
	var subnets []netip.Prefix
	for _, n := range []string{"cnpd-ns1", "cnpd-ns2"} {
		cfg := ipamConfig(t, n)
		if len(cfg) != 1 {
			t.Fatalf("%s: IPAM config %+v", n, cfg)
		}
		p, err := netip.ParsePrefix(cfg[0].Subnet)
		if err != nil || !base.Contains(p.Addr()) || p.Bits() != 24 {
			t.Fatalf("%s: subnet %q not a /24 of %s", n, cfg[0].Subnet, base)
		}
		subnets = append(subnets, p)
	}
	if subnets[0].Overlaps(subnets[1]) {
		t.Errorf("two networks, overlapping subnets %v", subnets)
	}
	c := runDetached(t, "cnpd-ns-1", "--network", "cnpd-ns2")
	ip, _ := containerIPs(t, c, "cnpd-ns2")
	if a, err := netip.ParseAddr(ip); err != nil || !subnets[1].Contains(a) {
		t.Errorf("container address %q not in %s", ip, subnets[1])
	}
}

// --ip-range: dynamic addresses only from the sub-range.
func TestIPRange(t *testing.T) {
	needDocker(t)
	t.Parallel()
	const net = "cnpd-ir"
	network(t, net, "--subnet", "10.213.11.0/24", "--ip-range", "10.213.11.128/26")
	sub := netip.MustParsePrefix("10.213.11.128/26")
	for i := range 2 {
		c := runDetached(t, fmt.Sprintf("cnpd-ir-%d", i), "--network", net)
		ip, _ := containerIPs(t, c, net)
		if a, err := netip.ParseAddr(ip); err != nil || !sub.Contains(a) {
			t.Errorf("container %d got %q, outside --ip-range %s", i, ip, sub)
		}
	}
}

// --aux-address: reserved for Docker, never given to a container, freed
// by network rm.
func TestAuxAddresses(t *testing.T) {
	needDocker(t)
	t.Parallel()
	const net, pool = "cnpd-aux", "docker-10.213.12.0-24"
	network(t, net, "--subnet", "10.213.12.0/24", "--aux-address", "r1=10.213.12.2", "--aux-address", "r2=10.213.12.3")
	r := reservations(t, pool)
	if !isDockers(r["10.213.12.2"]) || !isDockers(r["10.213.12.3"]) {
		t.Fatalf("aux addresses not reserved: %q", r)
	}
	c := runDetached(t, "cnpd-aux-1", "--network", net)
	if ip, _ := containerIPs(t, c, net); ip == "10.213.12.2" || ip == "10.213.12.3" {
		t.Errorf("container got aux address %s", ip)
	}
	dk(t, "rm", "-f", c)
	dk(t, "network", "rm", net)
	if r := reservations(t, pool); len(r) != 0 {
		t.Errorf("network rm left %q", r)
	}
}

// --ipam-opt cniplugins.pool=NAME binds a network to a defined pool.
func TestIpamOptBindsDefinedPool(t *testing.T) {
	needDocker(t)
	t.Parallel()
	const net = "cnpd-opt"
	network(t, net, "--ipam-opt", "cniplugins.pool=named")
	if cfg := ipamConfig(t, net); len(cfg) != 1 || cfg[0].Subnet != "10.213.2.0/24" {
		t.Fatalf("IPAM config %+v, want the pool's subnet", cfg)
	}
	c := runDetached(t, "cnpd-opt-1", "--network", net)
	ip, _ := containerIPs(t, c, net)
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Compare(netip.MustParseAddr("10.213.2.10")) < 0 || a.Compare(netip.MustParseAddr("10.213.2.50")) > 0 {
		t.Errorf("container got %q, outside pool named's range", ip)
	}
	if r := reservations(t, "named"); !isDockers(r[ip]) {
		t.Errorf("no Docker reservation for %s in pool named: %q", ip, r)
	}
}

// --ipv6: an IPv4 and an IPv6 pool, both from the driver, both on eth0;
// from the default pools and from explicit subnets.
func TestDualStack(t *testing.T) {
	needDocker(t)
	t.Parallel()
	cases := []struct {
		net  string
		args []string
		v6   netip.Prefix
	}{
		{"cnpd-ds1", nil, netip.MustParsePrefix("fd00:213:8000::/52")},
		{"cnpd-ds2", []string{"--subnet", "10.213.15.0/24", "--subnet", "fd00:213:15::/64"}, netip.MustParsePrefix("fd00:213:15::/64")},
	}
	for _, c := range cases {
		network(t, c.net, append([]string{"--ipv6"}, c.args...)...)
		cfg := ipamConfig(t, c.net)
		if len(cfg) != 2 {
			t.Fatalf("%s: IPAM config %+v, want two pools", c.net, cfg)
		}
		ctr := runDetached(t, c.net+"-1", "--network", c.net)
		v4, v6 := containerIPs(t, ctr, c.net)
		a6, err := netip.ParseAddr(v6)
		if err != nil || !c.v6.Contains(a6) || !strings.HasPrefix(v4, "10.213.") {
			t.Errorf("%s: container got %q and %q", c.net, v4, v6)
		}
		got := strings.Join(eth0(t, ctr), " ")
		if !strings.Contains(got, v4+"/") || !strings.Contains(got, v6+"/") {
			t.Errorf("%s: eth0 holds %q, want %s and %s", c.net, got, v4, v6)
		}
	}
}
