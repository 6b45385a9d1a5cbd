package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// ipResult is the part of a result these tests look at.
type ipResult struct {
	CNIVersion string `json:"cniVersion"`
	IPs        []struct {
		Address string `json:"address"`
		Gateway string `json:"gateway"`
	} `json:"ips"`
	Routes []struct {
		Dst string `json:"dst"`
	} `json:"routes"`
	DNS struct {
		Nameservers []string `json:"nameservers"`
		Search      []string `json:"search"`
	} `json:"dns"`
}

func parseResult(t *testing.T, b []byte) ipResult {
	t.Helper()
	var r ipResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result %q: %v", b, err)
	}
	return r
}

func (r ipResult) addrs() string {
	var out []string
	for _, ip := range r.IPs {
		out = append(out, ip.Address+" gw "+ip.Gateway)
	}
	return strings.Join(out, ", ")
}

// call builds an invocation of plugin for container id on eth0.
func call(plugin, cmd, id string, conf []byte) testbin.Call {
	return testbin.Call{Plugin: plugin, Command: cmd, ContainerID: id, IfName: "eth0", Netns: "/var/run/netns/" + id, Path: binDir, Stdin: conf}
}

// The host-local README's command-line example, through ipam-da-pools.
func TestHostLocalReadmeExample(t *testing.T) {
	dataDir := t.TempDir()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("# comment\nnameserver 192.0.2.53\nsearch example.com corp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"example","ipam":{"type":"ipam-da-pools","dataDir":%q,"resolvConf":%q,
		"ranges":[[{"subnet":"203.0.113.0/24"}],[{"subnet":"2001:db8:1::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}]}}`, dataDir, resolv)
	r := testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "example", []byte(conf)))
	res := parseResult(t, r.Stdout)
	if got := res.addrs(); got != "203.0.113.2/24 gw 203.0.113.1, 2001:db8:1::2/64 gw 2001:db8:1::1" {
		t.Errorf("addresses = %s", got)
	}
	if len(res.Routes) != 2 || res.DNS.Nameservers[0] != "192.0.2.53" || strings.Join(res.DNS.Search, " ") != "example.com corp" {
		t.Errorf("routes/dns = %+v %+v", res.Routes, res.DNS)
	}
	for file, want := range map[string]string{
		"203.0.113.2":        "example\r\neth0",
		"2001:db8:1::2":      "example\r\neth0",
		"last_reserved_ip.0": "203.0.113.2",
		"last_reserved_ip.1": "2001:db8:1::2",
	} {
		if b, err := os.ReadFile(filepath.Join(dataDir, "example", file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
}

func chainConf(network, dataDir string, pools string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":%q,"pools":%s,
		"poolDefinitions":{"shared":[{"subnet":"10.55.0.0/29"}]}}}`, network, dataDir, pools))
}

// Two networks selecting one pool never share an address, and each
// network's GC leaves the other's reservations alone.
func TestPoolModeTwoNetworksShareOnePool(t *testing.T) {
	dataDir := t.TempDir()
	netA := chainConf("net-a", dataDir, `[{"name":"shared"}]`)
	netB := chainConf("net-b", dataDir, `[{"name":"shared"}]`)
	seen := map[string]string{}
	for i, conf := range [][]byte{netA, netB, netA, netB} {
		id := fmt.Sprintf("c%d", i)
		r := testbin.MustSucceed(t, call("ipam-delegated", "ADD", id, conf))
		addr := parseResult(t, r.Stdout).IPs[0].Address
		if other, dup := seen[addr]; dup {
			t.Fatalf("%s handed to both %s and %s", addr, other, id)
		}
		seen[addr] = id
	}
	poolDir := filepath.Join(dataDir, "_pools", "shared")
	b, err := os.ReadFile(filepath.Join(poolDir, "10.55.0.2"))
	if err != nil || string(b) != "c0\r\neth0\r\nnet-a" {
		t.Errorf("pool reservation = %q, %v; want container, ifname and network", b, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "net-a")); err == nil {
		t.Errorf("pool mode wrote a network directory")
	}

	// GC of net-a with c2 valid: c0 goes, c2 stays, net-b's c1 and c3 stay.
	gc := call("ipam-delegated", "GC", "", []byte(strings.Replace(string(netA), `"name":"net-a",`,
		`"name":"net-a","cni.dev/valid-attachments":[{"containerID":"c2","ifname":"eth0"}],`, 1)))
	gc.ContainerID, gc.IfName, gc.Netns = "", "", ""
	testbin.MustSucceed(t, gc)
	if got := reservations(t, poolDir); got != "10.55.0.3 10.55.0.4 10.55.0.5" {
		t.Errorf("after GC of net-a: %s; want only c1, c2, c3's", got)
	}

	// The shared /29 has 5 addresses (gateway .1); with 3 held, two more
	// fit, then the pool is exhausted (100) and STATUS says 50.
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "c4", netB))
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "c5", netB))
	r := testbin.Run(call("ipam-delegated", "ADD", "c6", netA))
	if e := r.Err(); e == nil || e.Code != 100 || !strings.Contains(e.Msg+e.Details, "shared") {
		t.Fatalf("ADD on a full pool: %+v, want 100 naming the pool", e)
	}
	status := call("ipam-delegated", "STATUS", "", netA)
	status.ContainerID, status.IfName, status.Netns = "", "", ""
	if e := testbin.Run(status).Err(); e == nil || e.Code != 50 {
		t.Errorf("STATUS on an exhausted pool: %+v, want 50", e)
	}
	del := call("ipam-delegated", "DEL", "c4", netB)
	testbin.MustSucceed(t, del)
	if e := testbin.Run(status).Err(); e != nil {
		t.Errorf("STATUS after a release: %+v, want success", e)
	}
}

// reservations lists the reservation files of dir (not the lock, cursors
// or the _sticky hold records).
func reservations(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, e := range entries {
		if n := e.Name(); n != "lock" && !strings.HasPrefix(n, "last_reserved_ip") && !strings.HasPrefix(n, "_") {
			ips = append(ips, n)
		}
	}
	sort.Strings(ips)
	return strings.Join(ips, " ")
}

func TestAllocatorCommandsAndCodes(t *testing.T) {
	dataDir := t.TempDir()
	conf := func(extra string) []byte {
		return []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"codes","ipam":{"type":"ipam-da-pools","dataDir":%q,
			"ranges":[[{"subnet":"10.66.0.0/29"}]]%s}}`, dataDir, extra))
	}
	add := testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "a", conf("")))
	first := parseResult(t, add.Stdout).IPs[0].Address
	if first != "10.66.0.2/29" {
		t.Fatalf("first address %s", first)
	}
	prev := `,"prevResult":` + string(add.Stdout)
	withPrev := func(extra string) []byte { b := conf(extra); return append(b[:len(b)-1], []byte(prev+"}")...) }

	tests := []struct {
		name string
		c    testbin.Call
		code uint
		in   string // substring of msg+details
	}{
		{"duplicate attachment", call("ipam-da-pools", "ADD", "a", conf("")), 102, "10.66.0.2"},
		{"requested taken", func() testbin.Call {
			c := call("ipam-da-pools", "ADD", "b", conf(""))
			c.Args = "IP=10.66.0.2"
			return c
		}(), 101, "10.66.0.2"},
		{"requested gateway", func() testbin.Call {
			c := call("ipam-da-pools", "ADD", "b", conf(""))
			c.Args = "IP=10.66.0.1"
			return c
		}(), 101, "10.66.0.1"},
		{"requested outside", func() testbin.Call {
			c := call("ipam-da-pools", "ADD", "b", conf(""))
			c.Args = "IP=192.0.2.1"
			return c
		}(), 101, "192.0.2.1"},
		{"requested network address", func() testbin.Call {
			c := call("ipam-da-pools", "ADD", "b", conf(""))
			c.Args = "IP=10.66.0.0"
			return c
		}(), 101, "10.66.0.0"},
		{"CHECK of someone else's address", call("ipam-da-pools", "CHECK", "zzz", withPrev("")), 3, "10.66.0.2"},
		{"unknown pool", call("ipam-da-pools", "ADD", "b", []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"codes","ipam":{"dataDir":%q},"prevResult":{"cniVersion":"1.0.0","pools":[{"name":"nowhere"}]}}`, dataDir))), 7, "nowhere"},
		{"no ranges", call("ipam-da-pools", "ADD", "b", []byte(`{"cniVersion":"1.0.0","name":"codes","ipam":{}}`)), 7, "ipam.ranges"},
		{"relative dataDir", call("ipam-da-pools", "ADD", "b", []byte(`{"cniVersion":"1.0.0","name":"codes","ipam":{"dataDir":"rel","ranges":[[{"subnet":"10.0.0.0/24"}]]}}`)), 7, "ipam.dataDir"},
		{"overlapping sets", call("ipam-da-pools", "ADD", "b", conf(`,"subnet":"10.66.0.0/24"`)), 7, "overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testbin.Run(tt.c)
			e := r.Err()
			if e == nil || e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.in) {
				t.Errorf("got %+v (exit %d), want code %d mentioning %q", e, r.Exit, tt.code, tt.in)
			}
		})
	}
	// CHECK of a network no ADD ever used: nothing is held there (the
	// engine's 3), and CHECK, which only reads, creates no state directory.
	never := []byte(strings.Replace(string(withPrev("")), `"name":"codes"`, `"name":"never"`, 1))
	if e := testbin.Run(call("ipam-da-pools", "CHECK", "a", never)).Err(); e == nil || e.Code != 3 || !strings.Contains(e.Details, "10.66.0.2") {
		t.Errorf("CHECK where no ADD ever was: %+v, want code 3 naming 10.66.0.2", e)
	}
	if _, err := os.Lstat(filepath.Join(dataDir, "never")); !os.IsNotExist(err) {
		t.Errorf("CHECK created the state directory of a network no ADD used (%v)", err)
	}
	// Nothing above left a reservation behind.
	if got := reservations(t, filepath.Join(dataDir, "codes")); got != "10.66.0.2" {
		t.Errorf("reservations after failed ADDs: %s", got)
	}

	testbin.MustSucceed(t, call("ipam-da-pools", "CHECK", "a", withPrev("")))
	// Requested addresses, from each source, are honoured.
	for i, src := range []struct{ args, extra string }{
		{args: "IP=10.66.0.5"},
		{extra: `},"args":{"cni":{"ips":["10.66.0.6"]}`},
		{extra: `},"runtimeConfig":{"ips":["10.66.0.4/29"]`},
	} {
		c := call("ipam-da-pools", "ADD", fmt.Sprintf("r%d", i), conf(src.extra))
		c.Args = src.args
		got := parseResult(t, testbin.MustSucceed(t, c).Stdout).IPs[0].Address
		if want := []string{"10.66.0.5/29", "10.66.0.6/29", "10.66.0.4/29"}[i]; got != want {
			t.Errorf("requested via %+v: got %s want %s", src, got, want)
		}
	}
	// DEL is idempotent and never fails for an unknown attachment.
	for _, id := range []string{"a", "a", "never-added"} {
		testbin.MustSucceed(t, call("ipam-da-pools", "DEL", id, conf("")))
	}
	if got := reservations(t, filepath.Join(dataDir, "codes")); got != "10.66.0.4 10.66.0.5 10.66.0.6" {
		t.Errorf("after DEL: %s", got)
	}
	// Exhaustion: 7 .. 3 left (.2 and .3 free... fill them), then 100.
	testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "x1", conf("")))
	testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "x2", conf("")))
	if e := testbin.Run(call("ipam-da-pools", "ADD", "x3", conf(""))).Err(); e == nil || e.Code != 100 {
		t.Errorf("full range set: %+v, want 100", e)
	}
}

// 100 concurrent ADD processes get 100 distinct addresses.
func TestConcurrentAddsDistinct(t *testing.T) {
	dataDir := t.TempDir()
	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"busy","ipam":{"type":"ipam-da-pools","dataDir":%q,"ranges":[[{"subnet":"10.77.0.0/24"}]]}}`, dataDir))
	const n = 100
	addrs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := testbin.Run(call("ipam-da-pools", "ADD", fmt.Sprintf("ctr-%d", i), conf))
			if r.Exit != 0 {
				addrs[i] = "error: " + string(r.Stdout)
				return
			}
			var res ipResult
			_ = json.Unmarshal(r.Stdout, &res)
			addrs[i] = res.IPs[0].Address
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i, a := range addrs {
		if strings.HasPrefix(a, "error") {
			t.Errorf("ADD %d failed: %s", i, a)
		}
		if j, dup := seen[a]; dup {
			t.Errorf("%s handed out twice (%d and %d)", a, j, i)
		}
		seen[a] = i
	}
	if got := len(strings.Fields(reservations(t, filepath.Join(dataDir, "busy")))); got != n {
		t.Errorf("%d reservation files, want %d", got, n)
	}
}
