package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// stickyNet is a standalone ipam-da-pools network with ipam.sticky by pod.
type stickyNet struct{ dataDir, holdFor string }

func (n stickyNet) conf(extra string) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"sticky","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.88.0.0/28"}]],"sticky":{"by":["pod","arg"],"holdFor":%q}}%s}`, n.dataDir, n.holdFor, extra)
}

func (n stickyNet) dir() string { return filepath.Join(n.dataDir, "sticky") }

// podCall is cmd for container id of pod ns/name.
func (n stickyNet) podCall(cmd, id, pod string) testbin.Call {
	c := call("ipam-da-pools", cmd, id, n.conf(""))
	if pod != "" {
		c.Args = "K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + pod
	}
	return c
}

func (n stickyNet) add(t *testing.T, id, pod string) string {
	t.Helper()
	return parseResult(t, testbin.MustSucceed(t, n.podCall("ADD", id, pod)).Stdout).IPs[0].Address
}

func (n stickyNet) gc(t *testing.T, valid ...string) {
	t.Helper()
	var refs []string
	for _, id := range valid {
		refs = append(refs, fmt.Sprintf(`{"containerID":%q,"ifname":"eth0"}`, id))
	}
	testbin.MustSucceed(t, call("ipam-da-pools", "GC", "", n.conf(`,"cni.dev/valid-attachments":[`+strings.Join(refs, ",")+`]`)))
}

// file is the content of a state directory file, "" when missing.
func (n stickyNet) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(n.dir(), name))
	return string(b)
}

func (n stickyNet) hold(t *testing.T, pod string) *alloc.Hold {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir(), "_sticky", alloc.StickyID("default/"+pod, "eth0")+".json"))
	if os.IsNotExist(err) {
		return nil
	}
	var h alloc.Hold
	if err != nil || json.Unmarshal(b, &h) != nil {
		t.Fatalf("hold record of %s: %s %v", pod, b, err)
	}
	return &h
}

func wantCode(t *testing.T, c testbin.Call, code uint, in string) {
	t.Helper()
	e := testbin.Run(c).Err()
	if e == nil || e.Code != code || !strings.Contains(e.Msg+" "+e.Details, in) {
		t.Errorf("%s %s: got %+v, want code %d mentioning %q", c.Command, c.ContainerID, e, code, in)
	}
}

func TestStickyRecreateKeepsAddress(t *testing.T) {
	n := stickyNet{t.TempDir(), "30m"}
	first := n.add(t, "c1", "web-0")
	n.add(t, "other", "web-1") // the next address, so that round robin would move on
	// The old pod is not deleted yet: 105, never a second address.
	wantCode(t, n.podCall("ADD", "c2", "web-0"), 105, "c1")
	testbin.MustSucceed(t, n.podCall("DEL", "c1", "")) // DEL without the pod's args
	ip := strings.TrimSuffix(first, "/28")
	id := alloc.StickyID("default/web-0", "eth0")
	if got := n.file(ip); got != "_sticky\r\n"+id {
		t.Errorf("held file = %q", got)
	}
	if h := n.hold(t, "web-0"); h == nil || !h.Held() || h.LastOwner != "c1" || h.Expires.Before(time.Now().Add(29*time.Minute)) {
		t.Errorf("hold after DEL = %+v", h)
	}
	// A pod without a key does not get it; round robin skips it.
	for i := range 3 {
		if got := n.add(t, fmt.Sprint("plain-", i), ""); got == first {
			t.Fatalf("held address %s handed to a pod without the key", got)
		}
	}
	// A requested address that differs: 101 naming the held one.
	c := n.podCall("ADD", "c2", "web-0")
	c.Args += ";IP=10.88.0.14"
	wantCode(t, c, 101, ip)
	if got := n.add(t, "c2", "web-0"); got != first {
		t.Errorf("recreated pod got %s, want %s", got, first)
	}
	if got := n.file(ip); got != "c2\r\neth0" {
		t.Errorf("file after re-ADD = %q", got)
	}
	if h := n.hold(t, "web-0"); h == nil || h.Owner != "c2" {
		t.Errorf("record after re-ADD = %+v", h)
	}
	// CHECK and a duplicate ADD behave as without stickiness.
	wantCode(t, n.podCall("ADD", "c2", "web-0"), 102, ip)
	// A key from CNI_ARGS CNIPLUGINS_STICKY_KEY works too (the "arg" source).
	c = call("ipam-da-pools", "ADD", "vm-run-1", n.conf(""))
	c.Args = "CNIPLUGINS_STICKY_KEY=vm-42"
	vm := parseResult(t, testbin.MustSucceed(t, c).Stdout).IPs[0].Address
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "vm-run-1", n.conf("")))
	c.ContainerID = "vm-run-2"
	if got := parseResult(t, testbin.MustSucceed(t, c).Stdout).IPs[0].Address; got != vm {
		t.Errorf("VM got %s after restart, want %s", got, vm)
	}
}

// TestStickyExpiry: a hold outlives a GC made within its holdFor and is
// freed by the first GC (or ADD) after its recorded expiry. The waits read
// the record's expiry instead of guessing: holdFor 5s leaves a GC exec
// started right after the DEL a margin of seconds, and the expiry is
// waited for, never raced.
func TestStickyExpiry(t *testing.T) {
	const holdFor = 5 * time.Second
	n := stickyNet{t.TempDir(), holdFor.String()}
	first := n.add(t, "c1", "web-0")
	deleted := time.Now()
	testbin.MustSucceed(t, n.podCall("DEL", "c1", "web-0"))
	n.gc(t) // within holdFor: kept whatever the valid attachments say
	h := n.hold(t, "web-0")
	if h == nil {
		t.Fatalf("GC freed a hold %s after its DEL, holdFor %s", time.Since(deleted), holdFor)
	}
	if h.Expires.Before(deleted.Add(holdFor)) {
		t.Fatalf("hold expires at %s, before its DEL (%s) + holdFor %s", h.Expires, deleted, holdFor)
	}
	waitPast(h.Expires)
	n.gc(t)
	ip := strings.TrimSuffix(first, "/28")
	if n.hold(t, "web-0") != nil || n.file(ip) != "" {
		t.Errorf("expired hold not freed: record %+v, file %q", n.hold(t, "web-0"), n.file(ip))
	}
	// An expired hold found by ADD before any GC is freed and replaced.
	n.add(t, "c2", "web-1")
	testbin.MustSucceed(t, n.podCall("DEL", "c2", ""))
	h = n.hold(t, "web-1")
	if h == nil {
		t.Fatal("no hold after DEL")
	}
	waitPast(h.Expires)
	got := n.add(t, "c3", "web-1")
	if h := n.hold(t, "web-1"); h == nil || h.Owner != "c3" || h.Address+"/28" != got {
		t.Errorf("record after ADD over an expired hold = %+v (got %s)", h, got)
	}
	if entries := reservationNames(t, n.dir()); len(entries) != 1 {
		t.Errorf("reservations = %v, want only %s", entries, got)
	}
}

// waitPast sleeps until the wall clock is past t.
func waitPast(t time.Time) { time.Sleep(time.Until(t) + 10*time.Millisecond) }

// A hold lasts the holdFor of the ADD that reserved the address, whatever
// the config says at the DEL: the record carries it, so every release
// (DEL, GC, an operator's gc or release) holds for as long.
func TestStickyHoldForIsTheADDs(t *testing.T) {
	added := stickyNet{t.TempDir(), "0"}
	added.add(t, "c1", "web-0")
	changed := stickyNet{added.dataDir, "1s"}
	testbin.MustSucceed(t, changed.podCall("DEL", "c1", "web-0"))
	if h := added.hold(t, "web-0"); h == nil || !h.Held() || !h.Expires.IsZero() {
		t.Fatalf("after a DEL with holdFor 1s of an ADD with 0: %+v, want held until released", h)
	}
	// Claimed again under the new config: its next DEL holds for 1s.
	changed.add(t, "c2", "web-0")
	testbin.MustSucceed(t, changed.podCall("DEL", "c2", "web-0"))
	// The DEL ran before now: 1s rounded up to the second ends within 2s.
	if h := added.hold(t, "web-0"); h == nil || h.HoldFor != "1s" || h.Expires.IsZero() || h.Expires.After(time.Now().Add(2*time.Second)) {
		t.Errorf("after the ADD and DEL with holdFor 1s: %+v", h)
	}
}

func reservationNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range strings.Fields(reservations(t, dir)) {
		if !strings.HasPrefix(f, "_") {
			out = append(out, f)
		}
	}
	return out
}

func TestStickyGC(t *testing.T) {
	n := stickyNet{t.TempDir(), "0"}
	a := n.add(t, "c1", "web-0")
	b := n.add(t, "c2", "web-1")
	plain := n.add(t, "c3", "")
	// c1 is still valid; c2 and c3 are gone. c2's key keeps its address as
	// a hold (holdFor "0": until released), c3's is freed.
	n.gc(t, "c1")
	if got := n.file(strings.TrimSuffix(a, "/28")); got != "c1\r\neth0" {
		t.Errorf("live pod's file = %q", got)
	}
	if h := n.hold(t, "web-1"); h == nil || !h.Held() || !h.Expires.IsZero() || h.LastOwner != "c2" {
		t.Errorf("gone pod's record = %+v", h)
	}
	if got := n.file(strings.TrimSuffix(plain, "/28")); got != "" {
		t.Errorf("keyless gone pod's file = %q", got)
	}
	// Nothing valid: the live pod's reservation becomes a hold too, and
	// holds with holdFor 0 never expire.
	n.gc(t)
	n.gc(t)
	for _, pod := range []string{"web-0", "web-1"} {
		if h := n.hold(t, pod); h == nil || !h.Held() {
			t.Errorf("%s record after GC = %+v", pod, h)
		}
	}
	if got := n.add(t, "c4", "web-1"); got != b {
		t.Errorf("web-1 got %s after GC, want %s", got, b)
	}
}

// The operators' CLI on local state with holds: leases, pools (table,
// JSON, Prometheus), release --sticky-key, gc and fsck.
func TestStickyOperatorsCLI(t *testing.T) {
	n := stickyNet{t.TempDir(), "0"}
	conf := filepath.Join(t.TempDir(), "sticky.conflist")
	ipam := strings.TrimSuffix(strings.SplitN(string(n.conf("")), `"ipam":`, 2)[1], "}")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"sticky","plugins":[{"type":"bridge","ipam":%s}]}`, ipam), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(want int, args ...string) string {
		t.Helper()
		r := cliRun(args...)
		if r.Exit != want {
			t.Fatalf("cniplugins %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.Exit, want, r.Stdout, r.Stderr)
		}
		return string(r.Stdout)
	}
	a := strings.TrimSuffix(n.add(t, "c1", "web-0"), "/28")
	b := strings.TrimSuffix(n.add(t, "c2", "web-1"), "/28")
	n.add(t, "c3", "")
	testbin.MustSucceed(t, n.podCall("DEL", "c1", ""))

	var leases []map[string]any
	if err := json.Unmarshal([]byte(cli(0, "leases", "--data-dir", n.dataDir, "-o", "json")), &leases); err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]map[string]any{}
	for _, l := range leases {
		byAddr[l["address"].(string)] = l
	}
	if l := byAddr[a]; l["owner"] != "sticky" || l["stickyKey"] != "default/web-0" || l["lastOwner"] != "c1" || l["containerID"] != "" || l["ifname"] != "eth0" || l["holdExpires"] != nil {
		t.Errorf("held lease = %v", l)
	}
	if l := byAddr[b]; l["owner"] != "cni" || l["stickyKey"] != "default/web-1" || l["containerID"] != "c2" {
		t.Errorf("reserved sticky lease = %v", l)
	}
	if out := cli(0, "leases", "--data-dir", n.dataDir); !strings.Contains(out, "STICKY-KEY") || !strings.Contains(out, `"default/web-0"  c1`) {
		t.Errorf("leases table:\n%s", out)
	}
	var usage []map[string]any
	if err := json.Unmarshal([]byte(cli(0, "pools", "--conf", conf, "-o", "json")), &usage); err != nil {
		t.Fatal(err)
	}
	if len(usage) != 1 || usage[0]["used"] != 3.0 || usage[0]["held"] != 1.0 {
		t.Errorf("pools = %v", usage)
	}
	if out := cli(0, "pools", "--conf", conf, "-o", "prom"); !strings.Contains(out, `cniplugins_ipam_held_addresses{kind="range-set",name="sticky",range_set="0",networks="sticky"} 1`) {
		t.Errorf("prom:\n%s", out)
	}
	if out := cli(0, "pools", "--conf", conf); !strings.Contains(out, "HELD") {
		t.Errorf("pools table:\n%s", out)
	}
	cli(0, "fsck", "--data-dir", n.dataDir)

	// release --sticky-key: refused while a container has the address.
	if r := cliRun("release", "--sticky-key", "default/web-1", "--network", "sticky", "--data-dir", n.dataDir); r.Exit == 0 || !strings.Contains(string(r.Stderr), "c2") {
		t.Errorf("release of a reserved key: exit %d %s", r.Exit, r.Stderr)
	}
	if out := cli(0, "release", "--sticky-key", "default/web-0", "--network", "sticky", "--data-dir", n.dataDir); !strings.Contains(out, "released "+a) {
		t.Errorf("release: %s", out)
	}
	if n.file(a) != "" || n.hold(t, "web-0") != nil {
		t.Errorf("after release: file %q, record %+v", n.file(a), n.hold(t, "web-0"))
	}
	// gc: c2 gone with a key → held (not released); c3 gone → released.
	out := cli(0, "gc", "--network", "sticky", "--keep", "none", "--data-dir", n.dataDir, "--apply")
	if strings.Contains(out, b) || !strings.Contains(out, "released") {
		t.Errorf("gc: %s", out)
	}
	// The hold lasts the holdFor its ADD was configured with ("0": until
	// released), which the record carries: gc has no network config.
	if h := n.hold(t, "web-1"); h == nil || !h.Held() || !h.Expires.IsZero() || h.HoldFor != "0s" {
		t.Errorf("after gc: %+v", h)
	}
	// release of a keyed reservation: it becomes a hold too, as its DEL
	// would make it; release --sticky-key then frees it.
	c := strings.TrimSuffix(n.add(t, "c5", "web-2"), "/28")
	if out := cli(0, "release", c, "--network", "sticky", "--data-dir", n.dataDir, "--dry-run"); !strings.Contains(out, "would hold for its sticky key "+c) || !strings.Contains(out, "sticky key default/web-2") {
		t.Errorf("release --dry-run of a keyed reservation: %s", out)
	}
	if h := n.hold(t, "web-2"); h == nil || h.Held() {
		t.Errorf("after a dry run: %+v", h)
	}
	if out := cli(0, "release", c, "--network", "sticky", "--data-dir", n.dataDir); !strings.Contains(out, "held for its sticky key "+c) {
		t.Errorf("release of a keyed reservation: %s", out)
	}
	if h := n.hold(t, "web-2"); h == nil || !h.Held() || h.LastOwner != "c5" || !h.Expires.IsZero() || n.file(c) != "_sticky\r\n"+alloc.StickyID("default/web-2", "eth0") {
		t.Errorf("after release: record %+v, file %q", h, n.file(c))
	}
	if got := n.add(t, "c6", "web-2"); got != c+"/28" {
		t.Errorf("web-2 re-created after release: %s, want %s", got, c)
	}
	cli(0, "release", c, "--network", "sticky", "--data-dir", n.dataDir)
	if out := cli(0, "release", "--sticky-key", "default/web-2", "--network", "sticky", "--data-dir", n.dataDir); !strings.Contains(out, "released "+c) || n.file(c) != "" || n.hold(t, "web-2") != nil {
		t.Errorf("release --sticky-key after release: %s, file %q", out, n.file(c))
	}
	// fsck: a held file without a record, and a record of nothing.
	orphan := filepath.Join(n.dir(), "10.88.0.13")
	if err := os.WriteFile(orphan, []byte("_sticky\r\n"+strings.Repeat("ab", 16)), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(n.dir(), "_sticky", alloc.StickyID("gone", "eth0")+".json")
	if err := os.WriteFile(stale, []byte(`{"key":"gone","ifname":"eth0","address":"10.88.0.12","network":"sticky","lastOwner":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := cli(1, "fsck", "--data-dir", n.dataDir); !strings.Contains(out, "no hold record") || !strings.Contains(out, "holds nothing") {
		t.Errorf("fsck:\n%s", out)
	}
	cli(0, "fsck", "--data-dir", n.dataDir, "--repair")
	cli(0, "fsck", "--data-dir", n.dataDir)
	for _, p := range []string{orphan, stale} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s not repaired: %v", p, err)
		}
	}
	if n.hold(t, "web-1") == nil {
		t.Error("fsck --repair dropped a valid hold")
	}
}

// A failed ADD leaves nothing behind: a fresh allocation's record and
// reservation go, a claimed hold goes back to held exactly as it was.
func TestStickyFailedAddLeavesNothing(t *testing.T) {
	dataDir := t.TempDir()
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"dual","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.89.0.0/28"}],[{"subnet":"fd89::/120"}]],"sticky":{"by":["arg"],"holdFor":"1h"}}}`, dataDir)
	dir := filepath.Join(dataDir, "dual")
	add := func(id, key, ip string) testbin.Reply {
		c := call("ipam-da-pools", "ADD", id, conf)
		c.Args = "CNIPLUGINS_STICKY_KEY=" + key
		if ip != "" {
			c.Args += ";IP=" + ip
		}
		return testbin.Run(c)
	}
	snapshot := func() string {
		var out []string
		for _, sub := range []string{".", "_sticky"} {
			des, _ := os.ReadDir(filepath.Join(dir, sub))
			for _, de := range des {
				if de.IsDir() || strings.HasPrefix(de.Name(), ".") || strings.HasPrefix(de.Name(), "last_reserved") {
					continue
				}
				b, _ := os.ReadFile(filepath.Join(dir, sub, de.Name()))
				out = append(out, sub+"/"+de.Name()+"="+string(b))
			}
		}
		return strings.Join(out, "\n")
	}
	r := add("c1", "vm-1", "")
	if r.Exit != 0 {
		t.Fatalf("ADD: %s", r.Stdout)
	}
	res := parseResult(t, r.Stdout)
	if len(res.IPs) != 2 {
		t.Fatalf("dual-stack ADD: %s", r.Stdout)
	}
	v6 := strings.TrimSuffix(res.IPs[1].Address, "/120")
	// A new key whose second target fails (its requested address is
	// taken): nothing of it remains.
	before := snapshot()
	if e := add("c2", "vm-2", v6).Err(); e == nil || e.Code != 101 {
		t.Fatalf("ADD with a taken address: %+v", e)
	}
	if got := snapshot(); got != before {
		t.Errorf("failed ADD of a new key left:\n%s\nwant:\n%s", got, before)
	}
	// A held key whose ADD fails on the second target: both holds as they were.
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "c1", conf))
	if e := add("c3", "other", "").Err(); e != nil {
		t.Fatal(e)
	}
	before = snapshot()
	if !strings.Contains(before, "_sticky\r\n") {
		t.Fatalf("no held files after DEL:\n%s", before)
	}
	c := call("ipam-da-pools", "ADD", "c4", conf)
	c.Args = "CNIPLUGINS_STICKY_KEY=vm-1;IP=" + strings.TrimSuffix(res.IPs[0].Address, "/28") + ",fd89::99"
	if e := testbin.Run(c).Err(); e == nil || e.Code != 101 || !strings.Contains(e.Details, v6) {
		t.Fatalf("ADD with a second address differing from the held one: %+v, want 101 naming %s", e, v6)
	}
	if got := snapshot(); got != before {
		t.Errorf("failed ADD of a held key changed the state:\n%s\nwant:\n%s", got, before)
	}
	// And the key gets both its addresses back.
	r = add("c5", "vm-1", "")
	if got := parseResult(t, r.Stdout).addrs(); got != res.addrs() {
		t.Errorf("key vm-1 got %s, want %s", got, res.addrs())
	}
}

// TestStickyKeyCollision: StickyID is not a cryptographic hash, so a key
// may be crafted to collide with another's. Simulated here by moving
// web-0's hold (record and held file) to web-1's ID: web-1's ADD finds a
// record that is not its own and is refused (7), and web-0's hold and
// address are left exactly as they were.
func TestStickyKeyCollision(t *testing.T) {
	n := stickyNet{dataDir: t.TempDir(), holdFor: "1h"}
	a := n.add(t, "c1", "web-0")
	testbin.MustSucceed(t, n.podCall("DEL", "c1", "web-0"))
	ip := strings.Split(a, "/")[0]
	id0, id1 := alloc.StickyID("default/web-0", "eth0"), alloc.StickyID("default/web-1", "eth0")
	if err := os.Rename(filepath.Join(n.dir(), "_sticky", id0+".json"), filepath.Join(n.dir(), "_sticky", id1+".json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.dir(), ip), []byte("_sticky\r\n"+id1), 0o644); err != nil {
		t.Fatal(err)
	}
	record := n.file("_sticky/" + id1 + ".json")
	wantCode(t, n.podCall("ADD", "c2", "web-1"), 7, "collides")
	if got := n.file("_sticky/" + id1 + ".json"); got != record {
		t.Errorf("the colliding ADD changed the other key's record:\n%s\nwas\n%s", got, record)
	}
	if got := n.file(ip); got != "_sticky\r\n"+id1 {
		t.Errorf("the held address's file is now %q", got)
	}
}
