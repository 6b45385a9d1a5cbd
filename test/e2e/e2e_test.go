package e2e

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// The delegated chain from examples/delegated-chain.conflist: bridge →
// ipam-delegated → ipam-ds-static → ipam-da-pools, then loopback.
func TestDelegatedChain(t *testing.T) {
	e := newEnv(t, "dc")
	list := e.list(e.example("delegated-chain.conflist", "10.88.0.", "10.199.1."))
	pool := e.poolDir("blue")

	ns1 := e.netns("1")
	rt1 := rt(ns1, "e2e-dc-1")
	res1 := e.mustAdd(list, rt1)
	ip1 := onlyIP(t, res1, "10.199.1.0/24")
	if lo, hi := netip.MustParseAddr("10.199.1.10"), netip.MustParseAddr("10.199.1.250"); ip1.Addr().Less(lo) || hi.Less(ip1.Addr()) {
		t.Errorf("address %s outside the pool's rangeStart..rangeEnd %s..%s", ip1, lo, hi)
	}
	gw := gateway(t, res1, ip1)
	if gw != netip.MustParseAddr("10.199.1.1") {
		t.Errorf("gateway %s, want the pool's 10.199.1.1", gw)
	}
	assertConfigured(t, ns1, ip1)
	if !linkUp(t, ns1, "lo") {
		t.Errorf("lo is down inside %s: the loopback plugin in the chain did not run", ns1)
	}
	ping(t, ns1, gw)
	e.mustCheck(list, rt1)
	assertReserved(t, pool, map[netip.Addr]string{ip1.Addr(): rt1.ContainerID})

	// A second container gets another address from the same pool.
	ns2 := e.netns("2")
	rt2 := rt(ns2, "e2e-dc-2")
	res2 := e.mustAdd(list, rt2)
	ip2 := onlyIP(t, res2, "10.199.1.0/24")
	if ip2.Addr() == ip1.Addr() {
		t.Fatalf("both containers got %s", ip1)
	}
	assertConfigured(t, ns2, ip2)
	ping(t, ns2, gateway(t, res2, ip2))
	assertReserved(t, pool, map[netip.Addr]string{ip1.Addr(): rt1.ContainerID, ip2.Addr(): rt2.ContainerID})

	// DEL releases the first container's address and only that.
	e.mustDel(list, rt1)
	assertReserved(t, pool, map[netip.Addr]string{ip2.Addr(): rt2.ContainerID})
	assertNoInterface(t, ns1)
	e.mustCheck(list, rt2)

	// CHECK really asks the allocator: with the reservation gone behind
	// its back, CHECK of the second container must fail.
	if err := os.Remove(filepath.Join(pool, ip2.Addr().String())); err != nil {
		t.Fatal(err)
	}
	if err := e.cni.CheckNetworkList(context.Background(), list, rt2); err == nil {
		t.Errorf("CHECK passed although %s is no longer reserved for %s", ip2, rt2.ContainerID)
	}
}

// Dual stack: one IPv4 and one IPv6 pool, both addresses on eth0.
func TestDualStack(t *testing.T) {
	e := newEnv(t, "ds")
	list := e.list(e.example("dual-stack.conflist", "10.90.0.", "10.199.2.", "fd00:90::", "fd00:199:0:2::"))
	ns := e.netns("1")
	r := rt(ns, "e2e-ds-1")
	res := e.mustAdd(list, r)
	ip4 := onlyIP(t, res, "10.199.2.0/24")
	ip6 := onlyIP(t, res, "fd00:199:0:2::/64")
	if len(res.IPs) != 2 {
		t.Errorf("result has %d addresses, want one per pool: %v", len(res.IPs), ips(res))
	}
	assertConfigured(t, ns, ip4, ip6)
	if gw6 := gateway(t, res, ip6); gw6 != netip.MustParseAddr("fd00:199:0:2::1") {
		t.Errorf("IPv6 gateway %s, want fd00:199:0:2::1", gw6)
	}
	ping(t, ns, gateway(t, res, ip4))
	e.mustCheck(list, r)
	assertReserved(t, e.poolDir("dual-v4"), map[netip.Addr]string{ip4.Addr(): r.ContainerID})
	assertReserved(t, e.poolDir("dual-v6"), map[netip.Addr]string{ip6.Addr(): r.ContainerID})

	e.mustDel(list, r)
	assertReserved(t, e.poolDir("dual-v4"), nil)
	assertReserved(t, e.poolDir("dual-v6"), nil)
	assertNoInterface(t, ns)
}

// ipam-da-pools standalone is a drop-in for host-local: the same conflist
// with only ipam.type changed, reading and writing the same state.
func TestStandaloneDropIn(t *testing.T) {
	e := newEnv(t, "sa")
	conf := e.example("standalone-host-local.conflist", "10.89.0.", "10.199.3.")
	ours := e.list(conf)
	if got := ipamOf(t, conf)["type"]; got != "ipam-da-pools" {
		t.Fatalf("the example's ipam.type is %v, want ipam-da-pools", got)
	}
	ipamOf(t, conf)["type"] = "host-local"
	upstream := e.list(conf)
	state := e.networkDir(ours.Name)

	// host-local starts the network...
	ns1 := e.netns("1")
	rt1 := rt(ns1, "e2e-sa-1")
	res1 := e.mustAdd(upstream, rt1)
	ip1 := onlyIP(t, res1, "10.199.3.0/24")

	// ...ipam-da-pools takes it over and continues where host-local was.
	ns2 := e.netns("2")
	rt2 := rt(ns2, "e2e-sa-2")
	res2 := e.mustAdd(ours, rt2)
	ip2 := onlyIP(t, res2, "10.199.3.0/24")
	if ip1.Addr().String() != "10.199.3.2" || ip2.Addr().String() != "10.199.3.3" {
		t.Errorf("host-local then ipam-da-pools handed out %s then %s, want 10.199.3.2 then 10.199.3.3", ip1, ip2)
	}
	assertConfigured(t, ns2, ip2)
	ping(t, ns2, gateway(t, res2, ip2))
	e.mustCheck(ours, rt2)
	// host-local's layout, byte for byte.
	for a, cid := range map[netip.Addr]string{ip1.Addr(): rt1.ContainerID, ip2.Addr(): rt2.ContainerID} {
		b, err := os.ReadFile(filepath.Join(state, a.String()))
		if want := cid + "\r\n" + ifName; err != nil || string(b) != want {
			t.Errorf("%s/%s: %q (%v), want %q", state, a, b, err, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(state, "last_reserved_ip.0")); err != nil || string(b) != ip2.Addr().String() {
		t.Errorf("last_reserved_ip.0 = %q (%v), want %s", b, err, ip2.Addr())
	}

	// ipam-da-pools releases what host-local reserved.
	e.mustDel(ours, rt1)
	assertReserved(t, state, map[netip.Addr]string{ip2.Addr(): rt2.ContainerID})
	assertNoInterface(t, ns1)

	// And host-local can take the state back.
	ns3 := e.netns("3")
	rt3 := rt(ns3, "e2e-sa-3")
	res3 := e.mustAdd(upstream, rt3)
	if ip3 := onlyIP(t, res3, "10.199.3.0/24"); ip3.Addr().String() != "10.199.3.4" {
		t.Errorf("host-local after ipam-da-pools handed out %s, want 10.199.3.4", ip3)
	}
	e.mustDel(ours, rt2)
	e.mustDel(ours, rt3)
	assertReserved(t, state, nil)
}

// GC releases the reservations of attachments the runtime no longer lists.
func TestGC(t *testing.T) {
	cases := []struct {
		name, tag, example, subnet string
		oldNew                     []string
		dir                        func(e *env, network string) string
	}{
		{"delegated chain", "gcd", "delegated-chain.conflist", "10.199.41.0/24", []string{"10.88.0.", "10.199.41."},
			func(e *env, _ string) string { return e.poolDir("blue") }},
		{"standalone", "gcs", "standalone-host-local.conflist", "10.199.42.0/24", []string{"10.89.0.", "10.199.42."},
			func(e *env, network string) string { return e.networkDir(network) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.tag)
			conf := e.example(tc.example, tc.oldNew...)
			list := e.list(conf)
			dir := tc.dir(e, list.Name)

			want := map[netip.Addr]string{}
			var valid []types.GCAttachment
			var stale netip.Addr
			for i, id := range []string{"1", "2", "3"} {
				r := rt(e.netns(id), "e2e-"+tc.tag+"-"+id)
				res := e.mustAdd(list, r)
				ip := onlyIP(t, res, tc.subnet).Addr()
				if i < 2 {
					want[ip] = r.ContainerID
					valid = append(valid, types.GCAttachment{ContainerID: r.ContainerID, IfName: r.IfName})
				} else {
					stale = ip
				}
			}
			if got := reservations(t, dir); len(got) != 3 {
				t.Fatalf("after three ADDs %s holds %v", dir, keys(got))
			}

			// GC (spec 1.1.0) as the IPAM plugin receives it (ipamView), from
			// a libcni with no cached attachments: what goes is what the
			// plugins' GC released, not libcni's DEL of cached attachments.
			// The teardown's DEL of the third attachment must still succeed.
			err := e.freshCNI().GCNetworkList(context.Background(), e.ipamView(conf), &libcni.GCArgs{ValidAttachments: valid})
			if err != nil {
				t.Fatalf("GC: %v", err)
			}
			assertReserved(t, dir, want)
			if _, ok := reservations(t, dir)[stale]; ok {
				t.Errorf("GC kept %s, reserved by an attachment not in cni.dev/valid-attachments", stale)
			}
		})
	}
}

// STATUS reports 50 once a pool is exhausted, and recovers after a release.
func TestStatus(t *testing.T) {
	cases := []struct {
		name, tag, example, subnet string
		oldNew                     []string
		tiny                       func(ipam map[string]any)
	}{
		{"delegated chain", "std", "delegated-chain.conflist", "10.199.51.0/30", []string{"10.88.0.", "10.199.51."},
			func(ipam map[string]any) {
				ipam["pools"] = []any{map[string]any{"name": "tiny", "subnet": "10.199.51.0/30"}}
			}},
		{"standalone", "sts", "standalone-host-local.conflist", "10.199.52.0/30", []string{"10.89.0.", "10.199.52."},
			func(ipam map[string]any) {
				ipam["ranges"] = []any{[]any{map[string]any{"subnet": "10.199.52.0/30"}}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.tag)
			conf := e.example(tc.example, tc.oldNew...)
			tc.tiny(ipamOf(t, conf))
			list := e.list(conf)
			status := e.ipamView(conf)

			if err := e.cni.GetStatusNetworkList(context.Background(), status); err != nil {
				t.Fatalf("STATUS of a fresh network: %v", err)
			}
			// A /30: the gateway is .1, so .2 is the only address to hand out.
			rt1 := rt(e.netns("1"), "e2e-"+tc.tag+"-1")
			res := e.mustAdd(list, rt1)
			if ip := onlyIP(t, res, tc.subnet); ip.Addr().As4()[3] != 2 {
				t.Errorf("the tiny pool handed out %s, want .2/30", ip)
			}
			if err := e.cni.GetStatusNetworkList(context.Background(), status); err != nil {
				t.Errorf("STATUS with the pool full but no ADD refused yet: %v", err)
			}
			_, err := e.add(list, rt(e.netns("2"), "e2e-"+tc.tag+"-2"))
			if cniCode(err) != 100 {
				t.Fatalf("ADD on the exhausted pool: %v (code %d), want code 100", err, cniCode(err))
			}
			err = e.cni.GetStatusNetworkList(context.Background(), status)
			if cniCode(err) != 50 {
				t.Fatalf("STATUS after an ADD failed for lack of addresses: %v (code %d), want code 50", err, cniCode(err))
			}
			e.mustDel(list, rt1)
			if err := e.cni.GetStatusNetworkList(context.Background(), status); err != nil {
				t.Errorf("STATUS after the address was released: %v, want success", err)
			}
		})
	}
}

// A delegate that fails after the allocator reserved an address: the
// chain rolls the reservation back, and nothing is left once the runtime
// has cleaned up after the failed ADD.
func TestRollback(t *testing.T) {
	e := newEnv(t, "rb")
	conf := e.example("delegated-chain.conflist", "10.88.0.", "10.199.6.")
	ipam := ipamOf(t, conf)
	ipam["delegates"] = append(ipam["delegates"].([]any), failDelegate)
	list := e.list(conf)
	pool := e.poolDir("blue")

	ns := e.netns("1")
	r := rt(ns, "e2e-rb-1")
	_, err := e.add(list, r)
	if err == nil {
		t.Fatal("ADD succeeded although the last delegate fails")
	}
	if cniCode(err) != 101 || !strings.Contains(err.Error(), failDelegate+": nope") {
		t.Errorf("ADD error %v (code %d), want the failing delegate's code 101 and its message prefixed with its name", err, cniCode(err))
	}
	// The allocator did reserve (it ran before the failing delegate); the
	// rollback must have released it before the ADD returned.
	if _, statErr := os.Stat(filepath.Join(pool, "last_reserved_ip.0")); statErr != nil {
		t.Errorf("the allocator never ran before the failing delegate: %v", statErr)
	}
	assertReserved(t, pool, nil)
	if addrs, ok := addrsOn(t, ns, ifName); ok {
		if len(addrs) != 0 {
			t.Errorf("%s inside %s has addresses %v after a failed ADD", ifName, ns, addrs)
		}
		// Debian's bridge (1.1.1) creates the veth before it calls IPAM and
		// leaves it on an IPAM error; the runtime's DEL removes it.
		t.Logf("%s exists (without addresses) after the failed ADD, until the runtime's DEL", ifName)
	}

	// What a runtime does after a failed ADD: DEL. It must succeed and
	// leave neither a reservation nor the interface.
	e.mustDel(list, r)
	assertReserved(t, pool, nil)
	assertNoInterface(t, ns)
}

// Older and current spec versions work end to end: ADD, CHECK, DEL.
func TestSpecVersions(t *testing.T) {
	for i, v := range []string{"0.4.0", "1.0.0"} {
		t.Run(v, func(t *testing.T) {
			tag := []string{"v04", "v10"}[i]
			subnet := []string{"10.199.71.", "10.199.72."}[i]
			e := newEnv(t, tag)
			conf := e.example("delegated-chain.conflist", "10.88.0.", subnet)
			conf["cniVersion"] = v
			list := e.list(conf)
			ns := e.netns("1")
			r := rt(ns, "e2e-"+tag+"-1")
			t.Cleanup(func() {
				if err := e.cni.DelNetworkList(context.Background(), list, r); err != nil {
					t.Errorf("teardown DEL: %v", err)
				}
			})
			raw, err := e.cni.AddNetworkList(context.Background(), list, r)
			if err != nil {
				t.Fatalf("ADD: %v", err)
			}
			if raw.Version() != v {
				t.Errorf("result version %s, want the config's %s", raw.Version(), v)
			}
			curRes, err := current.NewResultFromResult(raw)
			if err != nil {
				t.Fatalf("the %s result does not convert: %v", v, err)
			}
			ip := onlyIP(t, curRes, subnet+"0/24")
			assertConfigured(t, ns, ip)
			ping(t, ns, gateway(t, curRes, ip))
			e.mustCheck(list, r)
			assertReserved(t, e.poolDir("blue"), map[netip.Addr]string{ip.Addr(): r.ContainerID})
			e.mustDel(list, r)
			assertReserved(t, e.poolDir("blue"), nil)
			assertNoInterface(t, ns)
		})
	}
}

// Two networks sharing one pool (examples/shared-pool-a and -b) on one
// bridge never hand out the same address, and GC of one never releases the
// other's reservations.
func TestSharedPool(t *testing.T) {
	e := newEnv(t, "sp")
	confA := e.example("shared-pool-a.conflist", "10.91.0.", "10.199.8.")
	confB := e.example("shared-pool-b.conflist", "10.91.0.", "10.199.8.")
	a, b := e.list(confA), e.list(confB)
	if a.Name == b.Name {
		t.Fatalf("both examples name network %s", a.Name)
	}
	nsA, nsB := e.netns("a"), e.netns("b")
	rtA, rtB := rt(nsA, "e2e-sp-a"), rt(nsB, "e2e-sp-b")
	resA := e.mustAdd(a, rtA)
	resB := e.mustAdd(b, rtB)
	ipA, ipB := onlyIP(t, resA, "10.199.8.0/24"), onlyIP(t, resB, "10.199.8.0/24")
	if ipA.Addr() == ipB.Addr() {
		t.Fatalf("networks %s and %s both handed out %s from the shared pool", a.Name, b.Name, ipA)
	}
	assertConfigured(t, nsA, ipA)
	assertConfigured(t, nsB, ipB)
	ping(t, nsA, gateway(t, resA, ipA))
	ping(t, nsB, gateway(t, resB, ipB))
	pool := e.poolDir("shared")
	assertReserved(t, pool, map[netip.Addr]string{ipA.Addr(): rtA.ContainerID, ipB.Addr(): rtB.ContainerID})
	// README "State on disk": in a pool, the third line names the network.
	for ip, want := range map[netip.Addr]string{ipA.Addr(): rtA.ContainerID + "\r\n" + ifName + "\r\n" + a.Name, ipB.Addr(): rtB.ContainerID + "\r\n" + ifName + "\r\n" + b.Name} {
		if got := reservations(t, pool)[ip]; got != want {
			t.Errorf("%s/%s holds %q, want %q (the network on the third line)", pool, ip, got, want)
		}
	}

	// Network a's runtime has no live attachment left: GC of a releases
	// a's reservation only.
	if err := e.freshCNI().GCNetworkList(context.Background(), e.ipamView(confA), &libcni.GCArgs{ValidAttachments: []types.GCAttachment{}}); err != nil {
		t.Fatalf("GC of %s: %v", a.Name, err)
	}
	assertReserved(t, pool, map[netip.Addr]string{ipB.Addr(): rtB.ContainerID})
	e.mustCheck(b, rtB)
}
