package etcdstore_test

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/etcdkv"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// stickyRun runs cmd for container cid of pod on node; holdFor and
// extra (more ipam keys) shape the config, prev is a prevResult.
type stickyCase struct {
	t       *testing.T
	holdFor string
	ifname  string // "" for eth0
}

func (c stickyCase) run(cmd, node, cid, pod, prev string) (string, int) {
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"net","ipam":{"type":"ipam-da-etcd",
		"etcd":{"endpoints":["%s"],"prefix":"/sticky-test/%s/","nodeName":%q},
		"sticky":{"by":["pod"],"holdFor":%q},
		"ranges":[[{"subnet":"10.214.40.0/24"}]]}`,
		strings.Join(cluster.Endpoints(), `","`), c.t.Name(), node, c.holdFor)
	if prev != "" { // more top-level keys
		conf += "," + prev
	}
	conf += "}"
	var stdout, stderr bytes.Buffer
	env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_IFNAME=" + cmp.Or(c.ifname, "eth0"), "CNI_NETNS=/x", "CNI_PATH=/nonexistent",
		"CNI_ARGS=K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + pod}
	code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), code
}

func (c stickyCase) add(node, cid, pod string) (netip.Addr, string) {
	c.t.Helper()
	out, code := c.run("ADD", node, cid, pod, "")
	if code != 0 {
		c.t.Fatalf("ADD %s on %s: %s", cid, node, out)
	}
	i := strings.Index(out, `"address": "`)
	rest := out[i+len(`"address": "`):]
	return netip.MustParsePrefix(rest[:strings.IndexByte(rest, '"')]).Addr(), out
}

func (c stickyCase) ok(cmd, node, cid, pod, prev string) {
	c.t.Helper()
	if out, code := c.run(cmd, node, cid, pod, prev); code != 0 {
		c.t.Fatalf("%s %s on %s: %s", cmd, cid, node, out)
	}
}

// held ADDs container cid of pod on node and DELs it (with prevResult):
// the pod's address, now held for its key.
func (c stickyCase) held(node, cid, pod string) netip.Addr {
	c.t.Helper()
	a, _ := c.add(node, cid, pod)
	c.ok("DEL", node, cid, pod, prevOf(a))
	return a
}

func prevOf(addr netip.Addr) string {
	return fmt.Sprintf(`"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"%s/24"}]}`, addr)
}

func stickyAdmin(t *testing.T) *Operator { return operatorAt(t, "/sticky-test/") }

// stickyLeases is every lease of the test, as `leases` lists them.
func stickyLeases(t *testing.T) ([]ops.Lease, error) { return leasesAt(t, "/sticky-test/") }

// heldLeases lists the test's leases, and the holds among them.
func heldLeases(t *testing.T) (all, held []ops.Lease) {
	t.Helper()
	all, err := stickyLeases(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Held() {
			held = append(held, l)
		}
	}
	return all, held
}

func TestStickyRescheduleAndLive(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	a1, _ := c.add("host-a", "c1", "web-0")
	other, _ := c.add("host-a", "c9", "web-1")
	if other == a1 {
		t.Fatal("two keys share an address")
	}
	// The old pod is still there: 105, from any node.
	if out, code := c.run("ADD", "host-b", "c2", "web-0", ""); code == 0 || !strings.Contains(out, `"code":105`) {
		t.Fatalf("ADD under a live old pod: %s", out)
	}
	c.ok("DEL", "host-a", "c1", "web-0", prevOf(a1)) // the one-round-trip DEL
	ls, holds := heldLeases(t)
	if len(holds) != 1 {
		t.Fatalf("holds: %+v", ls)
	}
	if l := holds[0]; l.Address != a1.String() || l.StickyKey != "ns/web-0" || l.LastOwner != "c1" || l.Node != "host-a" || l.HoldExpires.IsZero() {
		t.Fatalf("hold: %+v", l)
	}
	// Another pod cannot get it meanwhile: fill the rest of the /24.
	for i := range 260 {
		out, code := c.run("ADD", "host-a", fmt.Sprintf("f%d", i), fmt.Sprintf("filler-%d", i), "")
		if code != 0 {
			if !strings.Contains(out, `"code":100`) {
				t.Fatal(out)
			}
			break
		}
		if strings.Contains(out, `"`+a1.String()+`/24"`) {
			t.Fatalf("held address handed to another key: %s", out)
		}
	}
	// Rescheduled on host-b with a new container ID: the same address.
	if a2, _ := c.add("host-b", "c2", "web-0"); a2 != a1 {
		t.Fatalf("rescheduled pod got %s, want %s", a2, a1)
	}
	// A DEL without prevResult (the read path) holds it too, and the
	// same key on another interface is another key.
	c.ok("DEL", "host-b", "c2", "web-0", "")
	if a3, _ := c.add("host-a", "c3", "web-0"); a3 != a1 {
		t.Fatalf("after a read-path DEL got %s, want %s", a3, a1)
	}
	// A requested address other than the held one: 101.
	c.ok("DEL", "host-a", "c3", "web-0", "")
	// The operator releases the hold: the address is free again.
	ad := stickyAdmin(t)
	rel, err := ad.Release(alloc.Scope{Network: "net"}, alloc.ReleaseRequest{Key: "ns/web-0", IfName: "eth0"}, false)
	if err != nil || len(rel.Holds) != 1 || rel.Holds[0].Address != a1.String() {
		t.Fatalf("release of the key: %+v %v", rel, err)
	}
	if _, err := ad.Release(alloc.Scope{Network: "net"}, alloc.ReleaseRequest{Key: "ns/web-0", IfName: "eth0"}, false); err == nil {
		t.Fatal("a second release of the key found a hold")
	}
}

// A release of a sticky key without --ifname frees its holds on every
// interface, those of one range set included: their exhaustion mark is
// written once (etcd refuses a transaction that writes a key twice).
func TestStickyReleaseEveryInterface(t *testing.T) {
	eth0, net1 := stickyCase{t: t, holdFor: "30m"}, stickyCase{t: t, holdFor: "30m", ifname: "net1"}
	a1, a2 := eth0.held("host-a", "c1", "web-0"), net1.held("host-a", "c1", "web-0")
	rel, err := stickyAdmin(t).Release(alloc.Scope{Network: "net"}, alloc.ReleaseRequest{Key: "ns/web-0"}, false)
	if err != nil || len(rel.Holds) != 2 {
		t.Fatalf("release of %s and %s: %+v %v", a1, a2, rel, err)
	}
	if ls, holds := heldLeases(t); len(holds) != 0 {
		t.Fatalf("holds left: %+v", ls)
	}
}

func TestStickyRequestedConflict(t *testing.T) {
	c := stickyCase{t: t, holdFor: "0"}
	a1 := c.held("host-a", "c1", "db-0")
	other := a1.Next()
	conf := func(ip netip.Addr) (string, int) {
		var stdout, stderr bytes.Buffer
		in := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"net","runtimeConfig":{"ips":["%s/24"]},"ipam":{"type":"ipam-da-etcd",
			"etcd":{"endpoints":["%s"],"prefix":"/sticky-test/%s/","nodeName":"host-b"},
			"sticky":{"by":["pod"],"holdFor":"0"},"ranges":[[{"subnet":"10.214.40.0/24"}]]}}`,
			ip, strings.Join(cluster.Endpoints(), `","`), t.Name())
		env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c2", "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent",
			"CNI_ARGS=K8S_POD_NAMESPACE=ns;K8S_POD_NAME=db-0"}
		code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), code
	}
	if out, code := conf(other); code == 0 || !strings.Contains(out, `"code":101`) || !strings.Contains(out, a1.String()) {
		t.Fatalf("another requested address: %s", out)
	}
	if out, code := conf(a1); code != 0 {
		t.Fatalf("the held address requested: %s", out)
	}
	// holdFor "0": no expiry; GC keeps it after a DEL whatever the
	// valid attachments say.
	c.ok("DEL", "host-b", "c2", "db-0", "")
	ls, _ := stickyLeases(t)
	if len(ls) != 1 || !ls[0].Held() || !ls[0].HoldExpires.IsZero() {
		t.Fatalf("leases: %+v", ls)
	}
	c.ok("GC", "host-b", "", "", `"cni.dev/valid-attachments":[]`)
	if ls, _ := stickyLeases(t); len(ls) != 1 || !ls[0].Held() {
		t.Fatalf("GC freed an unexpired hold: %+v", ls)
	}
}

func TestStickyExpiryGC(t *testing.T) {
	c := stickyCase{t: t, holdFor: "3s"}
	c.held("host-a", "c1", "web-0")
	ad := stickyAdmin(t)
	plan, err := ad.GC("host-a", "", "", alloc.NewKeepSet("", nil), false, true)
	if err != nil || len(plan) != 0 {
		t.Fatalf("GC of an unexpired hold: %+v %v", plan, err)
	}
	time.Sleep(4 * time.Second)
	ad = stickyAdmin(t)
	plan, err = ad.GC("host-a", "", "", alloc.NewKeepSet("", nil), true, true)
	if err != nil || len(plan) != 1 || !plan[0].Held() {
		t.Fatalf("GC of an expired hold: %+v %v", plan, err)
	}
	if ls, _ := stickyLeases(t); len(ls) != 0 {
		t.Fatalf("left: %+v", ls)
	}
	// The runtime's GC frees expired holds whatever the node, and keeps
	// the valid attachments'.
	c.add("host-a", "c5", "web-0")
	c.add("host-a", "c6", "web-1")
	c.ok("DEL", "host-a", "c5", "web-0", "")
	time.Sleep(4 * time.Second)
	c.ok("GC", "host-b", "", "", `"cni.dev/valid-attachments":[]`)
	c.ok("GC", "host-a", "", "", `"cni.dev/valid-attachments":[{"containerID":"c6","ifname":"eth0"}]`)
	if ls, _ := stickyLeases(t); len(ls) != 1 || ls[0].ContainerID != "c6" {
		t.Fatalf("after GC: %+v", ls)
	}
	// An expired hold found by ADD: freed, then allocated as usual.
	c.add("host-a", "c2", "web-0")
	c.ok("DEL", "host-a", "c2", "web-0", "")
	time.Sleep(4 * time.Second)
	if _, out := c.add("host-b", "c3", "web-0"); !strings.Contains(out, "10.214.40.") {
		t.Fatal(out)
	}
}

func TestStickyConcurrentSameKey(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	for round := range 5 {
		pod := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		outs := make([]string, 6)
		codes := make([]int, 6)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], codes[i] = c.run("ADD", fmt.Sprintf("host-%d", i%2), fmt.Sprintf("r%d-%d", round, i), pod, "")
			}()
		}
		wg.Wait()
		won := 0
		for i := range 6 {
			switch {
			case codes[i] == 0:
				won++
			case !strings.Contains(outs[i], `"code":105`):
				t.Fatalf("loser %d: %s", i, outs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners: %v", round, won, outs)
		}
	}
}

// An operator's release of a live sticky claim (a leaked container)
// leaves a hold, as a DEL would: the key's next ADD gets the address; a
// held address is refused by release, naming the key.
func TestStickyAdminRelease(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	a1, _ := c.add("host-a", "c1", "web-0")
	ad := stickyAdmin(t)
	if _, err := ad.Release(alloc.Scope{Network: "net"}, alloc.ReleaseRequest{Addr: a1}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ad.Release(alloc.Scope{Network: "net"}, alloc.ReleaseRequest{Addr: a1}, false); err == nil || !strings.Contains(err.Error(), `"ns/web-0"`) {
		t.Fatalf("release of a held address: %v", err)
	}
	if a2, _ := c.add("host-b", "c2", "web-0"); a2 != a1 {
		t.Fatalf("after release: %s, want %s", a2, a1)
	}
}

// staleHold is the address pod's key holds after its DEL on host-a,
// whose claim was then rewritten behind the plugins' back: a hold that
// pins nothing any more (alloc.VersionedHold).
func (c stickyCase) staleHold(pod string) netip.Addr {
	t := c.t
	t.Helper()
	a := c.held("host-a", "c1", pod)
	ad := stickyAdmin(t)
	k := ad.AddrKey(alloc.Scope{Network: "net"}, a)
	resp, err := ad.Client().Read(etcdkv.Get(k))
	if err != nil {
		t.Fatal(err)
	}
	claim, ok := resp.First(0)
	if !ok {
		t.Fatalf("no claim key for the held %s", a)
	}
	if _, err := ad.Client().Txn(etcdkv.Txn{Then: []etcdkv.Op{etcdkv.Put(k, claim.Value)}}); err != nil {
		t.Fatal(err)
	}
	return a
}

// A held key's take-over is sent without reading its address's claim
// first: the transaction compares the claim's revision with the hold's.
// When that fails (the claim rewritten without its hold), the ADD reads,
// finds the hold pins nothing, drops it and allocates as usual, never
// taking the address whose claim is no longer the hold's.
func TestStickyTakeOverChecksTheClaim(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	a1 := c.staleHold("web-0")
	a2, _ := c.add("host-b", "c2", "web-0")
	if a2 == a1 {
		t.Fatalf("took over %s although its claim is no longer the hold's", a1)
	}
	// The key's hold is now a2's: its pod comes back to it.
	c.ok("DEL", "host-b", "c2", "web-0", prevOf(a2))
	if a3, _ := c.add("host-a", "c3", "web-0"); a3 != a2 {
		t.Errorf("after the fallback the key holds %s, want %s", a3, a2)
	}
}

// A hold whose claim changed under it pins nothing, also for an ADD of
// its key that requests another address: that address, not 101 (the hold
// is judged before the request is, as the disk store judges every hold).
func TestStickyRequestChecksTheClaim(t *testing.T) {
	c := stickyCase{t: t, holdFor: "30m"}
	a1 := c.staleHold("web-0")
	other := a1.Next()
	out, code := c.run("ADD", "host-b", "c2", "web-0", fmt.Sprintf(`"runtimeConfig":{"ips":["%s/24"]}`, other))
	if code != 0 || !strings.Contains(out, other.String()+"/24") {
		t.Fatalf("ADD requesting %s with the key's hold stale: exit %d %s", other, code, out)
	}
}

// An ADD that took a hold over and then fails on another target puts the
// hold back as held: the next ADD gets both addresses again.
func TestStickyFailedAddRestoresHold(t *testing.T) {
	run := func(cmd, cid, ips string) (string, int) {
		conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"net",%s"ipam":{"type":"ipam-da-etcd",
			"etcd":{"endpoints":["%s"],"prefix":"/sticky-test/%s/","nodeName":"host-a"},
			"sticky":{"by":["pod"]},
			"ranges":[[{"subnet":"10.214.41.0/24"}],[{"subnet":"fd00:214:41::/64"}]]}}`,
			ips, strings.Join(cluster.Endpoints(), `","`), t.Name())
		var stdout, stderr bytes.Buffer
		env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent",
			"CNI_ARGS=K8S_POD_NAMESPACE=ns;K8S_POD_NAME=vm-0"}
		code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), code
	}
	first, code := run("ADD", "c1", "")
	if code != 0 {
		t.Fatal(first)
	}
	if out, code := run("DEL", "c1", ""); code != 0 {
		t.Fatal(out)
	}
	// The v4 hold is taken over, then the v6 target's request differs
	// from its hold: 101, and the v4 take-over is undone.
	if out, code := run("ADD", "c2", `"runtimeConfig":{"ips":["fd00:214:41::99/64"]},`); code == 0 || !strings.Contains(out, `"code":101`) {
		t.Fatalf("ADD with another v6 address: %s", out)
	}
	ls, holds := heldLeases(t)
	if held := len(holds); held != 2 {
		t.Fatalf("after the failed ADD, %d holds: %+v", held, ls)
	}
	again, code := run("ADD", "c3", "")
	if code != 0 {
		t.Fatal(again)
	}
	ips := func(out string) string {
		var b strings.Builder
		for _, part := range strings.Split(out, `"address": "`)[1:] {
			b.WriteString(part[:strings.IndexByte(part, '"')] + " ")
		}
		return b.String()
	}
	if ips(again) != ips(first) || ips(first) == "" {
		t.Fatalf("after the failed ADD: %s, want %s", ips(again), ips(first))
	}
}
