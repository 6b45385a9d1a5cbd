package testbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// NetNS creates the named network namespace (`ip netns add`) and deletes
// it when the test ends, also on failure. Without root, or where the
// machine cannot create namespaces, the test is skipped loudly. The name
// must be the test's own (the caller's prefix); an existing namespace of
// that name fails the test rather than being reused or deleted.
func NetNS(t testing.TB, name string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPING: network namespace %s needs root", name)
	}
	if _, err := os.Stat("/var/run/netns/" + name); err == nil {
		t.Fatalf("network namespace %s already exists; refusing to touch it", name)
	}
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("SKIPPING: `ip netns add %s` failed (%v: %s); this machine cannot create network namespaces", name, err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return name
}

// IP runs `ip -n ns args...` and fails the test on error: how tests build
// links, addresses and routes inside their own namespaces only.
func IP(t testing.TB, ns string, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %v: %v: %s", ns, args, err, out)
	}
}

// InNetNS runs f on an OS thread switched into the named namespace, so
// that whatever f execs (a plugin, as a runtime would from that
// namespace) runs there. The thread is never handed back to the
// scheduler: the goroutine exits still locked and Go discards the
// thread, so no other goroutine ever runs in the namespace. f runs on
// another goroutine: it must not call t.Fatal (return what to check).
func InNetNS(ns string, f func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		h, err := netns.GetFromName(ns)
		if err == nil {
			err = netns.Set(h)
			h.Close()
		}
		if err != nil {
			errc <- fmt.Errorf("entering netns %s: %w", ns, err)
			return
		}
		defer func() { errc <- nil }()
		f()
	}()
	return <-errc
}

// HostLink creates link name, up, inside ns, to stand for a host's LAN
// interface: a dummy link where the kernel has the dummy driver, else a
// veth whose peer (name+"p", also up) stays in ns, the nearest thing some
// kernels (Firecracker's, for one) offer. Either carries addresses and
// routes and can be a macvlan's master. It reports which it made.
func HostLink(t testing.TB, ns, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "-n", ns, "link", "add", name, "type", "dummy").CombinedOutput(); err == nil {
		IP(t, ns, "link", "set", name, "up")
		return "dummy"
	} else if !bytes.Contains(out, []byte("Unknown device type")) {
		t.Fatalf("ip -n %s link add %s type dummy: %v: %s", ns, name, err, out)
	}
	IP(t, ns, "link", "add", name, "type", "veth", "peer", "name", name+"p")
	IP(t, ns, "link", "set", name+"p", "up")
	IP(t, ns, "link", "set", name, "up")
	return "veth (no dummy driver in this kernel)"
}
