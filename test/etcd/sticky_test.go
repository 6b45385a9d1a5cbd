package etcd

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// Sticky addresses across hosts (docs/etcd.md, "Sticky addresses"): the
// real binary, two or more hosts sharing the cluster.

// stickyConf is a standalone config of host h with ipam.sticky by pod.
func stickyConf(t *testing.T, h host, holdFor string, eps []string) []byte {
	extra := map[string]any{}
	if eps != nil {
		extra["endpoints"], extra["timeout"] = eps, "2s"
	}
	ipam := map[string]any{"type": "ipam-da-etcd", "ranges": [][]map[string]any{{{"subnet": "10.214.50.0/24"}}}, "dataDir": h.dir,
		"etcd": etcdKeys(t, h, extra), "sticky": map[string]any{"by": []string{"pod"}, "holdFor": holdFor}}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "etcd-net", "ipam": ipam})
}

// stateValues is the test's keys and values but the nodes' records and
// the exhaustion marks.
func stateValues(t *testing.T) map[string]string {
	t.Helper()
	kvs, err := cluster.Values(prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	for k := range kvs {
		if strings.Contains(k, "/nodes/") || strings.Contains(k, "/full/") || strings.Contains(k, "/fences/") {
			delete(kvs, k)
		}
	}
	return kvs
}

func podArgs(pod string) string { return "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + pod }

func stickyCall(cmd, cid, pod string, conf []byte) testbin.Reply {
	return call("ipam-da-etcd", cmd, cid, conf, podArgs(pod))
}

func stickyAdd(t *testing.T, cid, pod string, conf []byte) (testbin.Reply, netip.Addr) {
	t.Helper()
	r := stickyCall("ADD", cid, pod, conf)
	if r.Exit != 0 {
		t.Fatalf("ADD %s (%s): exit %d\nstdout: %s\nstderr: %s", cid, pod, r.Exit, r.Stdout, r.Stderr)
	}
	return r, addrsOf(t, r.Stdout)[0]
}

func stickyRun(t *testing.T, cmd, cid, pod string, conf []byte) {
	t.Helper()
	if r := stickyCall(cmd, cid, pod, conf); r.Exit != 0 {
		t.Fatalf("%s %s (%s): exit %d\nstdout: %s\nstderr: %s", cmd, cid, pod, r.Exit, r.Stdout, r.Stderr)
	}
}

func withTop(t *testing.T, conf []byte, key string, v any) []byte {
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = v
	return mustJSON(t, m)
}

// TestStickyReschedule: a StatefulSet pod on host-a; its replacement on
// host-b gets 105 while the old one is there, and its address once the
// old one was DELeted; leases --etcd shows the hold in between.
func TestStickyReschedule(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	confA, confB := stickyConf(t, a, "30m", nil), stickyConf(t, b, "30m", nil)
	r1, a1 := stickyAdd(t, "c1", "web-0", confA)
	_, other := stickyAdd(t, "c9", "web-1", confB)
	if other == a1 {
		t.Fatal("two keys, one address")
	}
	wantCode(t, stickyCall("ADD", "c2", "web-0", confB), 105)
	stickyRun(t, "DEL", "c1", "web-0", withPrev(t, confA, r1.Stdout))

	r := cli(t, "leases", "-o", "json")
	var ls []map[string]any
	if err := json.Unmarshal(r.Stdout, &ls); err != nil || r.Exit != 0 {
		t.Fatalf("leases: %s %s", r.Stdout, r.Stderr)
	}
	found := false
	for _, l := range ls {
		if l["owner"] == "sticky" {
			found = true
			if l["address"] != a1.String() || l["stickyKey"] != "ns/web-0" || l["lastOwner"] != "c1" || l["holdExpires"] == nil || l["node"] != "host-a" {
				t.Fatalf("the hold as leases shows it: %v", l)
			}
		}
	}
	if !found {
		t.Fatalf("no hold in leases: %s", r.Stdout)
	}

	r2, a2 := stickyAdd(t, "c2", "web-0", confB)
	if a2 != a1 {
		t.Fatalf("rescheduled on host-b: %s, want %s", a2, a1)
	}
	mustCheck := stickyCall("CHECK", "c2", "web-0", withPrev(t, confB, r2.Stdout))
	if mustCheck.Exit != 0 {
		t.Fatalf("CHECK: %s %s", mustCheck.Stdout, mustCheck.Stderr)
	}
	// And back to host-a, the DEL through its read path this time.
	stickyRun(t, "DEL", "c2", "web-0", confB)
	if _, a3 := stickyAdd(t, "c3", "web-0", confA); a3 != a1 {
		t.Fatalf("back on host-a: %s, want %s", a3, a1)
	}
	// A requested address other than the held one: 101 naming it.
	stickyRun(t, "DEL", "c3", "web-0", confA)
	e := wantCode(t, stickyCall("ADD", "c4", "web-0", withTop(t, confA, "runtimeConfig", map[string]any{"ips": []string{other.Next().String() + "/24"}})), 101)
	if !strings.Contains(e.Details, a1.String()) {
		t.Fatalf("101 does not name the held address: %+v", e)
	}
}

// TestStickyConcurrentHosts: 32 ADDs at once from two hosts over 16 keys,
// each its own container: each key gets one address (one winner, the
// others 105), no address two keys; then all DELs, and a second wave with
// new containers gets each key's address back.
func TestStickyConcurrentHosts(t *testing.T) {
	needCluster(t)
	hs := []host{newHost(t, "host-a"), newHost(t, "host-b")}
	confs := [][]byte{stickyConf(t, hs[0], "30m", nil), stickyConf(t, hs[1], "30m", nil)}
	wave := func(w int) map[string]netip.Addr {
		rs := make([]testbin.Reply, 32)
		parallel(32, func(i int) {
			rs[i] = stickyCall("ADD", fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("pod-%d", i%16), confs[i%2])
		})
		got := map[string]netip.Addr{}
		byAddr := map[netip.Addr]string{}
		for i, r := range rs {
			pod := fmt.Sprintf("pod-%d", i%16)
			if r.Exit != 0 {
				wantCode(t, r, 105)
				continue
			}
			a := addrsOf(t, r.Stdout)[0]
			if _, dup := got[pod]; dup {
				t.Fatalf("wave %d: %s won twice", w, pod)
			}
			if k, dup := byAddr[a]; dup {
				t.Fatalf("wave %d: %s given to %s and %s", w, a, k, pod)
			}
			got[pod], byAddr[a] = a, pod
			defer stickyRun(t, "DEL", fmt.Sprintf("w%d-%d", w, i), pod, confs[i%2])
		}
		if len(got) != 16 {
			t.Fatalf("wave %d: %d keys won, want 16", w, len(got))
		}
		return got
	}
	first := wave(0)
	second := wave(1)
	for pod, a := range first {
		if second[pod] != a {
			t.Fatalf("%s: %s, then %s", pod, a, second[pod])
		}
	}
}

// TestStickyExpiryAndGC: holdFor 1s, then the runtime's GC (no valid
// attachments at all) frees the hold and its address; with holdFor "0"
// the same GC keeps it.
func TestStickyExpiryAndGC(t *testing.T) {
	needCluster(t)
	a := newHost(t, "host-a")
	for _, holdFor := range []string{"1s", "0"} {
		conf := stickyConf(t, a, holdFor, nil)
		r1, _ := stickyAdd(t, "c-"+holdFor, "web-0", conf)
		stickyRun(t, "DEL", "c-"+holdFor, "web-0", withPrev(t, conf, r1.Stdout))
		if ks := keys(t); len(ks) != 2 {
			t.Fatalf("holdFor %s after DEL: %v, want the claim and the hold", holdFor, ks)
		}
		time.Sleep(2 * time.Second)
		mustRun(t, "GC", "", withTop(t, conf, "cni.dev/valid-attachments", []any{}))
		if holdFor == "1s" {
			wantNoKeys(t)
			continue
		}
		if ks := keys(t); len(ks) != 2 {
			t.Fatalf("holdFor 0 after GC: %v", ks)
		}
		if r := cli(t, "gc", "--node", "host-a", "--apply", "--force"); r.Exit != 0 || len(keys(t)) != 2 {
			t.Fatalf("gc --etcd freed an unexpired hold: %s %s %v", r.Stdout, r.Stderr, keys(t))
		}
	}
}

// TestStickyLateDelCopy: the first copy of a sticky attachment's DEL is
// held on its way; the DEL is retried and holds the address, the same
// container is ADDed again and takes the hold over (the same address),
// then the late copy is delivered: it must change nothing, the claim, its
// index key and the hold stay the new ADD's.
func TestStickyLateDelCopy(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("late-sticky", 0, 3))
	conf := stickyConf(t, h, "30m", urls(ps...))
	r1, a1 := stickyAdd(t, "c1", "web-0", conf)
	held := ps[0].on(func(r request) bool { return r.txn() && r.deletes() }, hold, 1)
	stickyRun(t, "DEL", "c1", "web-0", withPrev(t, conf, r1.Stdout))
	waitFor(t, held.arrived, 5*time.Second, "the DEL's first copy")
	if ks := keys(t); len(ks) != 2 {
		t.Fatalf("after the DEL: %v, want the claim and the hold", ks)
	}
	before := keys(t)
	r2, a2 := stickyAdd(t, "c1", "web-0", conf)
	if a2 != a1 {
		t.Fatalf("re-ADD got %s, want the held %s", a2, a1)
	}
	want := stateValues(t)
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late copy's delivery")
	if got := stateValues(t); len(got) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the late DEL copy:\n%v\nwant\n%v", got, want)
	}
	// Still live: another pod with the key gets 105; the DEL holds it again.
	wantCode(t, stickyCall("ADD", "c2", "web-0", conf), 105)
	stickyRun(t, "DEL", "c1", "web-0", withPrev(t, conf, r2.Stdout))
	if ks := keys(t); !slices.Equal(ks, before) {
		t.Fatalf("after the second DEL: %v, want %v", ks, before)
	}
}

// TestStickyUnansweredTakeOverIsFenced: the take-over of a hold is the
// claim: its first copy is held on the way, the ADD fences it and takes
// the hold over through another member; the late copy, delivered after,
// changes nothing.
func TestStickyUnansweredTakeOverIsFenced(t *testing.T) {
	needCluster(t)
	ps := proxies(t)
	h := newHost(t, nodeFirst("fence-sticky", 0, 3))
	conf := stickyConf(t, h, "30m", urls(ps...))
	r1, a1 := stickyAdd(t, "c1", "web-0", conf)
	stickyRun(t, "DEL", "c1", "web-0", withPrev(t, conf, r1.Stdout))
	// The take-over compares the hold's revision (the first claim, which
	// finds the hold, requires it absent: CREATE).
	takeOver := func(r request) bool {
		return r.txn() && r.putsUnder("/sticky/") && r.putsUnder("/ip/") && r.takesOver()
	}
	held := ps[0].on(takeOver, hold, 1)
	r2, a2 := stickyAdd(t, "c2", "web-0", conf)
	if a2 != a1 {
		t.Fatalf("take-over got %s, want %s", a2, a1)
	}
	waitFor(t, held.arrived, time.Second, "the take-over's first copy")
	want := fmt.Sprint(stateValues(t))
	close(held.release)
	waitFor(t, held.applied, 5*time.Second, "the late copy's delivery")
	if got := fmt.Sprint(stateValues(t)); got != want {
		t.Fatalf("after the late take-over copy:\n%s\nwant\n%s", got, want)
	}
	if n := len(ps[0].requests(takeOver)) + len(ps[1].requests(takeOver)) + len(ps[2].requests(takeOver)); n != 2 {
		t.Errorf("%d take-overs sent, want 2: the lost one (never re-sent) and the one over the fence", n)
	}
	if n := len(keys(t)); n != 3 {
		t.Fatalf("keys %v, want claim, index key and hold", keys(t))
	}
	stickyRun(t, "DEL", "c2", "web-0", withPrev(t, conf, r2.Stdout))
	if _, a3 := stickyAdd(t, "c3", "web-0", conf); a3 != a1 {
		t.Fatalf("after the fenced take-over: %s, want %s", a3, a1)
	}
}
