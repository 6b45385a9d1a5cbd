package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// The private test ranges: every address a test hands to a plugin must lie
// in one of them (checked before any conflist is used).
var (
	testNet4 = netip.MustParsePrefix("10.199.0.0/16")
	testNet6 = netip.MustParsePrefix("fd00:199::/48")
)

const ifName = "eth0"

// env is one test's world: its own bridge, data dir and libcni cache.
type env struct {
	t       *testing.T
	tag     string
	bridge  string
	dataDir string
	cni     *libcni.CNIConfig
	// world names the test's netns and bridge and bounds its addresses.
	world world
}

// world is what a family of tests may create and use: the name prefixes
// of its network namespaces and bridges, and its address ranges.
type world struct {
	netnsPrefix, bridgePrefix string
	nets                      []netip.Prefix
}

// e2eWorld is the world of the tests of this package that predate worlds.
func e2eWorld() world {
	return world{netnsPrefix: "cniplugins-e2e", bridgePrefix: "e2e", nets: []netip.Prefix{testNet4, testNet6}}
}

// newEnv skips loudly unless the machine can run the test at all (root),
// fails when the upstream plugins are missing (`make test` installs them),
// and arranges for the bridge to be deleted and the forwarding sysctls the
// bridge plugin flips (isGateway) to be restored, even on failure.
func newEnv(t *testing.T, tag string) *env {
	t.Helper()
	return newEnvIn(t, tag, e2eWorld())
}

// newEnvIn is newEnv in world w.
func newEnvIn(t *testing.T, tag string, w world) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING end-to-end test: it needs root (network namespaces, bridges); run `go test ./test/e2e/` as root")
	}
	for _, p := range []string{"bridge", "loopback", "host-local"} {
		if _, err := os.Stat(filepath.Join(upstreamDir, p)); err != nil {
			t.Fatalf("upstream plugin %s missing in %s: run scripts/test-deps.sh (Debian package containernetworking-plugins): %v", p, upstreamDir, err)
		}
	}
	restoreSysctls(t, "/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding")
	e := &env{
		t:       t,
		tag:     tag,
		bridge:  fmt.Sprintf("%s%s%d", w.bridgePrefix, tag, os.Getpid()%100000),
		world:   w,
		dataDir: t.TempDir(),
		cni:     libcni.NewCNIConfigWithCacheDir(binDirs, t.TempDir(), nil),
	}
	if len(e.bridge) > 15 {
		t.Fatalf("bridge name %q too long for the kernel", e.bridge)
	}
	if _, err := netlink.LinkByName(e.bridge); err == nil {
		t.Fatalf("a link named %s already exists; refusing to touch it", e.bridge)
	}
	t.Cleanup(func() { deleteLink(t, e.bridge) })
	return e
}

func restoreSysctls(t *testing.T, paths ...string) {
	for _, p := range paths {
		old, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		t.Cleanup(func() {
			if now, err := os.ReadFile(p); err == nil && !bytes.Equal(now, old) {
				if err := os.WriteFile(p, old, 0o644); err != nil {
					t.Errorf("restoring %s: %v", p, err)
				}
			}
		})
	}
}

func deleteLink(t *testing.T, name string) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return
	}
	if err := netlink.LinkDel(link); err != nil {
		t.Errorf("deleting %s: %v", name, err)
	}
}

// netns creates a named network namespace, deleted when the test ends. A
// machine where `ip netns add` fails cannot run these tests: skip loudly.
func (e *env) netns(suffix string) string {
	e.t.Helper()
	name := fmt.Sprintf("%s-%s-%s-%d", e.world.netnsPrefix, e.tag, suffix, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		e.t.Skipf("SKIPPING end-to-end test: `ip netns add %s` failed (%v: %s); this machine cannot create network namespaces", name, err, bytes.TrimSpace(out))
	}
	e.t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			e.t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// rt is the attachment of containerID's eth0 in netns ns.
func rt(ns, containerID string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: containerID, NetNS: "/var/run/netns/" + ns, IfName: ifName}
}

// add runs ADD as a runtime does, and registers the runtime's teardown (DEL,
// also after a failed ADD, as the spec asks of runtimes) for the end of the
// test. DEL must be idempotent, so that DEL failing is an error even when
// the test already deleted the attachment.
func (e *env) add(list *libcni.NetworkConfigList, r *libcni.RuntimeConf) (*current.Result, error) {
	e.t.Helper()
	e.t.Cleanup(func() {
		if err := e.cni.DelNetworkList(context.Background(), list, r); err != nil {
			e.t.Errorf("teardown DEL of %s/%s on %s: %v", r.ContainerID, r.IfName, list.Name, err)
		}
	})
	res, err := e.cni.AddNetworkList(context.Background(), list, r)
	if err != nil {
		return nil, err
	}
	cur, err := current.NewResultFromResult(res)
	if err != nil {
		e.t.Fatalf("ADD %s: result %v does not convert to %s: %v", r.ContainerID, res, current.ImplementedSpecVersion, err)
	}
	return cur, nil
}

func (e *env) mustAdd(list *libcni.NetworkConfigList, r *libcni.RuntimeConf) *current.Result {
	e.t.Helper()
	res, err := e.add(list, r)
	if err != nil {
		e.t.Fatalf("ADD %s on %s: %v", r.ContainerID, list.Name, err)
	}
	return res
}

func (e *env) mustCheck(list *libcni.NetworkConfigList, r *libcni.RuntimeConf) {
	e.t.Helper()
	if err := e.cni.CheckNetworkList(context.Background(), list, r); err != nil {
		e.t.Fatalf("CHECK %s on %s: %v", r.ContainerID, list.Name, err)
	}
}

func (e *env) mustDel(list *libcni.NetworkConfigList, r *libcni.RuntimeConf) {
	e.t.Helper()
	if err := e.cni.DelNetworkList(context.Background(), list, r); err != nil {
		e.t.Fatalf("DEL %s on %s: %v", r.ContainerID, list.Name, err)
	}
}

// example loads examples/<file> as a generic JSON object and makes it this
// test's: every bridge plugin gets the test's bridge, every ipam section
// the test's dataDir, and the example's subnets are rewritten by the
// old/new string pairs in every string inside the plugins (subnet,
// rangeStart, gateway...). A pair that matches nothing fails the test: the
// example changed and the test must follow.
func (e *env) example(file string, oldNew ...string) map[string]any {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "examples", file))
	if err != nil {
		e.t.Fatal(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(b, &conf); err != nil {
		e.t.Fatalf("%s: %v", file, err)
	}
	for i := 0; i < len(oldNew); i += 2 {
		found := false
		walkStrings(conf["plugins"], func(s string) string {
			if strings.Contains(s, oldNew[i]) {
				found = true
				return strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
			}
			return s
		})
		if !found {
			e.t.Fatalf("%s no longer contains %q; update the test's substitutions", file, oldNew[i])
		}
	}
	for _, p := range plugins(conf) {
		if p["type"] == "bridge" {
			p["bridge"] = e.bridge
		}
		if ipam, ok := p["ipam"].(map[string]any); ok {
			ipam["dataDir"] = e.dataDir
			if _, ok := ipam["resolvConf"]; ok {
				// The test's own, so the host's resolv.conf plays no part.
				// (Debian's bridge reports its own config's dns, not the
				// IPAM result's, so only the IPAM tests see it.)
				resolv := filepath.Join(e.t.TempDir(), "resolv.conf")
				if err := os.WriteFile(resolv, []byte("nameserver 10.199.0.53\n"), 0o644); err != nil {
					e.t.Fatal(err)
				}
				ipam["resolvConf"] = resolv
			}
		}
	}
	return conf
}

// list turns an edited example into a libcni list, after checking that
// every address in it is in the private test ranges and that every bridge
// is the test's own.
func (e *env) list(conf map[string]any) *libcni.NetworkConfigList {
	e.t.Helper()
	walkStrings(conf["plugins"], func(s string) string {
		if !private(s, e.world.nets) {
			e.t.Fatalf("config uses %q, outside the test ranges %v", s, e.world.nets)
		}
		return s
	})
	for _, p := range plugins(conf) {
		if p["type"] == "bridge" && p["bridge"] != e.bridge {
			e.t.Fatalf("bridge %v is not this test's (%s)", p["bridge"], e.bridge)
		}
	}
	b, err := json.Marshal(conf)
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := libcni.ConfListFromBytes(b)
	if err != nil {
		e.t.Fatalf("libcni rejects the config: %v\n%s", err, b)
	}
	return l
}

// ipamView is the network as its IPAM plugin sees GC and STATUS. A main
// plugin that implements spec 1.1.0 forwards both to its IPAM plugin with
// its own config unchanged; Debian's bridge (1.1.1) predates that spec, so
// libcni would stop at it. The view keeps the network's name and every key
// of the main plugin's config and only swaps its type for the IPAM
// plugin's, so the IPAM plugin receives exactly what such a bridge would
// hand it.
func (e *env) ipamView(conf map[string]any) *libcni.NetworkConfigList {
	e.t.Helper()
	var view map[string]any
	b, _ := json.Marshal(conf)
	_ = json.Unmarshal(b, &view)
	main := plugins(view)[0]
	main["type"] = ipamOf(e.t, view)["type"]
	view["plugins"] = []any{main}
	view["cniVersion"] = "1.1.0"
	return e.list(view)
}

// freshCNI is a libcni with an empty cache: GC through it cannot fall back
// on libcni's own DEL of cached attachments, so what is collected is what
// the plugins' GC collected.
func (e *env) freshCNI() *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir(binDirs, e.t.TempDir(), nil)
}

func plugins(conf map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := conf["plugins"].([]any)
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// ipamOf is the first plugin's ipam section.
func ipamOf(t *testing.T, conf map[string]any) map[string]any {
	t.Helper()
	for _, p := range plugins(conf) {
		if ipam, ok := p["ipam"].(map[string]any); ok {
			return ipam
		}
	}
	t.Fatal("config has no ipam section")
	return nil
}

// walkStrings replaces every string in v (recursively, in place) by f's
// answer.
func walkStrings(v any, f func(string) string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok {
				x[k] = f(s)
			} else {
				walkStrings(val, f)
			}
		}
	case []any:
		for i, val := range x {
			if s, ok := val.(string); ok {
				x[i] = f(s)
			} else {
				walkStrings(val, f)
			}
		}
	}
}

// private: s is not an address, or is in nets, or is a default
// route's destination.
func private(s string, nets []netip.Prefix) bool {
	var a netip.Addr
	if p, err := netip.ParsePrefix(s); err == nil {
		if p.Bits() == 0 {
			return true
		}
		a = p.Addr()
	} else if a, err = netip.ParseAddr(s); err != nil {
		return true
	}
	return slices.ContainsFunc(nets, func(n netip.Prefix) bool { return n.Contains(a) })
}

// ips are the result's addresses.
func ips(res *current.Result) []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range res.IPs {
		a, _ := netip.AddrFromSlice(ip.Address.IP)
		ones, _ := ip.Address.Mask.Size()
		out = append(out, netip.PrefixFrom(a.Unmap(), ones))
	}
	return out
}

// onlyIP is the result's single address in subnet; anything else fails.
func onlyIP(t *testing.T, res *current.Result, subnet string) netip.Prefix {
	t.Helper()
	want := netip.MustParsePrefix(subnet)
	var got []netip.Prefix
	for _, p := range ips(res) {
		if want.Contains(p.Addr()) {
			got = append(got, p)
		}
	}
	if len(got) != 1 || got[0].Bits() != want.Bits() {
		t.Fatalf("result %v: want exactly one address in %s with its prefix length", res, want)
	}
	return got[0]
}

// nsHandle opens netlink inside the named namespace.
func nsHandle(t *testing.T, ns string) *netlink.Handle {
	t.Helper()
	nsh, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatalf("opening netns %s: %v", ns, err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatalf("netlink in %s: %v", ns, err)
	}
	return h
}

// addrsOn lists the global addresses on ifname inside ns; nil (and no
// error) when the interface does not exist.
func addrsOn(t *testing.T, ns, ifname string) ([]netip.Prefix, bool) {
	t.Helper()
	h := nsHandle(t, ns)
	defer h.Close()
	link, err := h.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, false
		}
		t.Fatalf("looking up %s in %s: %v", ifname, ns, err)
	}
	list, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("addresses of %s in %s: %v", ifname, ns, err)
	}
	var out []netip.Prefix
	for _, a := range list {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		if ip.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, true
}

// assertConfigured: every address in want is on eth0 inside ns.
func assertConfigured(t *testing.T, ns string, want ...netip.Prefix) {
	t.Helper()
	got, ok := addrsOn(t, ns, ifName)
	if !ok {
		t.Fatalf("no %s inside netns %s", ifName, ns)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s inside netns %s has %v, not %s", ifName, ns, got, w)
		}
	}
}

func assertNoInterface(t *testing.T, ns string) {
	t.Helper()
	if got, ok := addrsOn(t, ns, ifName); ok {
		t.Errorf("%s still exists inside netns %s (addresses %v)", ifName, ns, got)
	}
}

// linkUp reports whether ifname is administratively up inside ns.
func linkUp(t *testing.T, ns, ifname string) bool {
	t.Helper()
	h := nsHandle(t, ns)
	defer h.Close()
	link, err := h.LinkByName(ifname)
	if err != nil {
		t.Fatalf("looking up %s in %s: %v", ifname, ns, err)
	}
	return link.Attrs().Flags&net.FlagUp != 0
}

// ping sends one echo request from inside ns to gw, the gateway address
// on the test's own bridge, and fails the test without an answer. It uses
// `ip netns exec NS ping` when ping is installed, and otherwise the same
// single ICMP echo from a raw socket opened inside the namespace.
func ping(t *testing.T, ns string, gw netip.Addr) {
	t.Helper()
	if !gw.Is4() {
		t.Fatalf("ping: only IPv4 gateways are pinged, not %s", gw)
	}
	if _, err := exec.LookPath("ping"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c1", "-W2", gw.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("ip netns exec %s ping -c1 -W2 %s: %v\n%s", ns, gw, err, out)
		}
		return
	}
	if err := echo(ns, gw); err != nil {
		t.Fatalf("ICMP echo from netns %s to %s: %v", ns, gw, err)
	}
}

// echo is one ICMP echo request and its reply, from a raw socket created
// inside ns. The socket is created on a locked thread that never returns
// to the scheduler (the goroutine exits locked, so Go discards the thread):
// no other goroutine can ever run in the test namespace.
func echo(ns string, dst netip.Addr) error {
	fdc := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		nsh, err := netns.GetFromName(ns)
		if err == nil {
			defer nsh.Close()
			err = netns.Set(nsh)
		}
		if err != nil {
			errc <- err
			return
		}
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			errc <- err
			return
		}
		fdc <- fd
	}()
	var fd int
	select {
	case err := <-errc:
		return err
	case fd = <-fdc:
	}
	defer syscall.Close(fd)
	tv := syscall.NsecToTimeval(int64(2 * time.Second))
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	id := uint16(os.Getpid())
	msg := []byte{8, 0, 0, 0, byte(id >> 8), byte(id), 0, 1, 'c', 'n', 'i', 'p', 'l', 'u', 'g', 's'}
	binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	to := &syscall.SockaddrInet4{Addr: dst.As4()}
	if err := syscall.Sendto(fd, msg, 0, to); err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("no echo reply: %w", err)
		}
		f, ok := from.(*syscall.SockaddrInet4)
		if !ok || netip.AddrFrom4(f.Addr) != dst || n < 20 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if n >= ihl+8 && buf[ihl] == 0 && binary.BigEndian.Uint16(buf[ihl+4:]) == id {
			return nil
		}
	}
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// gateway is the result's gateway for the address family of p.
func gateway(t *testing.T, res *current.Result, p netip.Prefix) netip.Addr {
	t.Helper()
	for _, ip := range res.IPs {
		a, _ := netip.AddrFromSlice(ip.Address.IP)
		if a.Unmap() == p.Addr() {
			gw, ok := netip.AddrFromSlice(ip.Gateway)
			if !ok {
				t.Fatalf("result has no gateway for %s", p)
			}
			return gw.Unmap()
		}
	}
	t.Fatalf("result has no %s", p)
	return netip.Addr{}
}

// reservations lists the addresses reserved in a state directory (the
// files named after an address; lock, last_reserved_ip.N and friends are
// not reservations).
func reservations(t *testing.T, dir string) map[netip.Addr]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[netip.Addr]string{}
	for _, ent := range entries {
		a, err := netip.ParseAddr(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[a] = string(b)
	}
	return out
}

// assertReserved: the state directory holds exactly want, each naming its
// attachment (container ID, then interface name, host-local's layout).
func assertReserved(t *testing.T, dir string, want map[netip.Addr]string) {
	t.Helper()
	got := reservations(t, dir)
	for a, cid := range want {
		content, ok := got[a]
		if !ok {
			t.Errorf("%s: no reservation file for %s (have %v)", dir, a, keys(got))
			continue
		}
		if !strings.HasPrefix(content, cid+"\r\n"+ifName) {
			t.Errorf("%s/%s holds %q, want %q first", dir, a, content, cid+"\r\n"+ifName)
		}
	}
	for a := range got {
		if _, ok := want[a]; !ok {
			t.Errorf("%s: unexpected reservation %s (%q); want only %v", dir, a, got[a], keys(want))
		}
	}
}

func keys(m map[netip.Addr]string) []string {
	var out []string
	for a := range m {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}

// cniCode is the CNI error code carried by err, or 0 when it carries none.
func cniCode(err error) uint {
	var e *types.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func (e *env) poolDir(name string) string { return filepath.Join(e.dataDir, "_pools", name) }

func (e *env) networkDir(name string) string { return filepath.Join(e.dataDir, name) }
