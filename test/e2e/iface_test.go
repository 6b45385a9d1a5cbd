package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// This test's own ranges (examples/macvlan-lan.conflist is rewritten into
// them): the LAN is 10.212.20.0/24.
var (
	ifaceNet4 = netip.MustParsePrefix("10.212.0.0/16")
	ifaceNet6 = netip.MustParsePrefix("fd00:212::/48")
)

// examples/macvlan-lan.conflist end to end: a namespace plays the host,
// with link cnpi0 on the "LAN" (testbin.HostLink: a dummy link, or a veth
// where the kernel has no dummy driver) holding the host's 10.212.20.100
// and a default route via 10.212.20.101, both inside the example's
// carve-out .100-.199. Two containers get macvlan interfaces on cnpi0 and
// addresses from ipam-delegated → ipam-ds-iface → ipam-da-pools: of the
// LAN's subnet, neither the host's nor the gateway's, and they ping each
// other. DEL frees them, the second after the host lost its address.
func TestMacvlanOnTheLAN(t *testing.T) {
	e := newEnv(t, "if")
	if _, err := os.Stat(filepath.Join(upstreamDir, "macvlan")); err != nil {
		t.Fatalf("upstream plugin macvlan missing in %s: run scripts/test-deps.sh: %v", upstreamDir, err)
	}
	pid := os.Getpid()
	host := testbin.NetNS(t, fmt.Sprintf("cnpi-e2e-host-%d", pid))
	t.Logf("LAN link: %s", testbin.HostLink(t, host, "cnpi0"))
	testbin.IP(t, host, "link", "set", "lo", "up")
	testbin.IP(t, host, "addr", "add", "10.212.20.100/24", "dev", "cnpi0")
	testbin.IP(t, host, "route", "add", "default", "via", "10.212.20.101", "dev", "cnpi0")

	list := ifaceList(t, e.example("macvlan-lan.conflist", "eth0", "cnpi0", "192.168.1.", "10.212.20."))
	pool := e.poolDir("iface-cnpi0-v4")
	ns1 := testbin.NetNS(t, fmt.Sprintf("cnpi-e2e-c1-%d", pid))
	ns2 := testbin.NetNS(t, fmt.Sprintf("cnpi-e2e-c2-%d", pid))
	rt1, rt2 := rt(ns1, "cnpi-e2e-c1"), rt(ns2, "cnpi-e2e-c2")

	res1 := e.addFrom(host, list, rt1)
	res2 := e.addFrom(host, list, rt2)
	ip1, ip2 := onlyIP(t, res1, "10.212.20.0/24"), onlyIP(t, res2, "10.212.20.0/24")
	// Round robin from rangeStart .100: .100 is the host's, .101 the
	// gateway, so .102 and .103.
	if ip1.Addr() != netip.MustParseAddr("10.212.20.102") || ip2.Addr() != netip.MustParseAddr("10.212.20.103") {
		t.Errorf("addresses %s, %s; want 10.212.20.102 and .103 (the host's .100 and the gateway .101 skipped)", ip1, ip2)
	}
	if gw := gateway(t, res1, ip1); gw != netip.MustParseAddr("10.212.20.101") {
		t.Errorf("gateway %s, want the host's default route's next hop 10.212.20.101", gw)
	}
	assertConfigured(t, ns1, ip1)
	assertConfigured(t, ns2, ip2)
	ping(t, ns1, ip2.Addr())
	ping(t, ns2, ip1.Addr())
	e.checkFrom(host, list, rt1)
	assertReserved(t, pool, map[netip.Addr]string{ip1.Addr(): rt1.ContainerID, ip2.Addr(): rt2.ContainerID})

	e.delFrom(host, list, rt1)
	assertNoInterface(t, ns1)
	assertReserved(t, pool, map[netip.Addr]string{ip2.Addr(): rt2.ContainerID})
	// The host loses its address (a lease gone): DEL still frees.
	testbin.IP(t, host, "addr", "flush", "dev", "cnpi0")
	e.delFrom(host, list, rt2)
	assertReserved(t, pool, map[netip.Addr]string{})
}

// ifaceList is e.list for this test's ranges.
func ifaceList(t *testing.T, conf map[string]any) *libcni.NetworkConfigList {
	t.Helper()
	walkStrings(conf["plugins"], func(s string) string {
		var a netip.Addr
		if p, err := netip.ParsePrefix(s); err == nil && p.Bits() > 0 {
			a = p.Addr()
		} else if a, err = netip.ParseAddr(s); err != nil {
			return s
		}
		if !ifaceNet4.Contains(a) && !ifaceNet6.Contains(a) {
			t.Fatalf("config uses %q, outside the test ranges %s and %s", s, ifaceNet4, ifaceNet6)
		}
		return s
	})
	b, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := libcni.ConfListFromBytes(b)
	if err != nil {
		t.Fatalf("libcni rejects the config: %v", err)
	}
	return l
}

// addFrom is e.add run from inside the host namespace hostNS, as the
// runtime of that host would (macvlan finds its master there, and
// ipam-ds-iface reads that namespace's links). Teardown DEL likewise.
func (e *env) addFrom(hostNS string, list *libcni.NetworkConfigList, r *libcni.RuntimeConf) *current.Result {
	e.t.Helper()
	e.t.Cleanup(func() {
		var err error
		if nsErr := testbin.InNetNS(hostNS, func() { err = e.cni.DelNetworkList(context.Background(), list, r) }); nsErr != nil || err != nil {
			e.t.Errorf("teardown DEL of %s on %s: %v %v", r.ContainerID, list.Name, nsErr, err)
		}
	})
	var (
		res *current.Result
		err error
	)
	if nsErr := testbin.InNetNS(hostNS, func() {
		r, addErr := e.cni.AddNetworkList(context.Background(), list, r)
		if err = addErr; err == nil {
			res, err = current.NewResultFromResult(r)
		}
	}); nsErr != nil {
		e.t.Fatal(nsErr)
	}
	if err != nil {
		e.t.Fatalf("ADD %s on %s: %v", r.ContainerID, list.Name, err)
	}
	return res
}

func (e *env) delFrom(hostNS string, list *libcni.NetworkConfigList, r *libcni.RuntimeConf) {
	e.t.Helper()
	var err error
	if nsErr := testbin.InNetNS(hostNS, func() { err = e.cni.DelNetworkList(context.Background(), list, r) }); nsErr != nil || err != nil {
		e.t.Fatalf("DEL %s on %s: %v %v", r.ContainerID, list.Name, nsErr, err)
	}
}

func (e *env) checkFrom(hostNS string, list *libcni.NetworkConfigList, r *libcni.RuntimeConf) {
	e.t.Helper()
	var err error
	if nsErr := testbin.InNetNS(hostNS, func() { err = e.cni.CheckNetworkList(context.Background(), list, r) }); nsErr != nil || err != nil {
		e.t.Fatalf("CHECK %s on %s: %v %v", r.ContainerID, list.Name, nsErr, err)
	}
}
