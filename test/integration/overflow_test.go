package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/tenancycase"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// ipam-da-pools through the real binary: the tenancy scenarios.
func daPoolsEnv(t *testing.T) tenancycase.Env {
	dataDir := t.TempDir()
	return tenancycase.Env{
		Conf: func(t *testing.T, defs map[string]any, pools []map[string]any) []byte {
			b, err := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "tenancy",
				"ipam":       map[string]any{"type": "ipam-da-pools", "dataDir": dataDir, "poolDefinitions": defs},
				"prevResult": map[string]any{"cniVersion": "1.1.0", "pools": pools}})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Run: func(cmd, cid string, conf []byte) testbin.Reply {
			c := call("ipam-da-pools", cmd, cid, conf)
			if cid == "" {
				c.ContainerID, c.IfName, c.Netns = "", "", ""
			}
			return testbin.Run(c)
		},
	}
}

func TestOverflowChains(t *testing.T) { tenancycase.RunOverflow(t, daPoolsEnv(t)) }

// Through the selectors: ipam-ds-args resolves a rule's pool's chain into
// a default pool, ipam-ds-static a pool's chain through poolDefinitions,
// and the allocator follows what the selection carries.
func TestOverflowThroughSelectors(t *testing.T) {
	dataDir := t.TempDir()
	args := []byte(`{"cniVersion":"1.1.0","name":"tenants","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":"` + dataDir + `",
		"rules":[{"namespace":"a","pools":[{"name":"ns-a","subnet":"10.232.1.0/29","rangeStart":"10.232.1.2","rangeEnd":"10.232.1.3","overflow":"shared"}]}],
		"defaultPools":[{"name":"shared","subnet":"10.232.9.0/29"}]}}`)
	static := []byte(`{"cniVersion":"1.1.0","name":"static","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"` + dataDir + `","pools":["st"],
		"poolDefinitions":{"st":{"ranges":[{"subnet":"10.232.2.0/29","rangeStart":"10.232.2.2","rangeEnd":"10.232.2.2"}],"overflow":"shared"},
			"shared":[{"subnet":"10.232.9.0/29"}]}}}`)
	static = []byte(strings.Replace(string(static), `"pools":["st"]`, `"pools":[{"name":"st"}]`, 1))
	got := func(conf []byte, id, ns string) string {
		t.Helper()
		c := call("ipam-delegated", "ADD", id, conf)
		c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + id
		return parseResult(t, testbin.MustSucceed(t, c).Stdout).IPs[0].Address
	}
	for i, want := range []string{"10.232.1.2/29", "10.232.1.3/29", "10.232.9.2/29", "10.232.9.3/29"} {
		if a := got(args, fmt.Sprint("a", i), "a"); a != want {
			t.Errorf("pod a%d got %s, want %s", i, a, want)
		}
	}
	for i, want := range []string{"10.232.2.2/29", "10.232.9.4/29"} {
		if a := got(static, fmt.Sprint("s", i), "x"); a != want {
			t.Errorf("static s%d got %s, want %s", i, a, want)
		}
	}
	// DEL without prevResult through the chain frees the address in shared.
	testbin.MustSucceed(t, call("ipam-delegated", "DEL", "a2", args))
	if a := got(static, "s2", "x"); a != "10.232.9.5/29" && a != "10.232.9.2/29" {
		t.Errorf("after a2's DEL, s2 got %s", a)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "_pools", "shared", "10.232.9.2")); err == nil && !strings.HasPrefix(string(b), "s2") {
		t.Errorf("a2's reservation survived its DEL: %q", b)
	}
	// A rule whose overflow names nothing: 7 on every command.
	bad := []byte(strings.Replace(string(args), `"overflow":"shared"`, `"overflow":"gone"`, 1))
	for _, cmd := range []string{"ADD", "DEL", "CHECK"} {
		c := call("ipam-delegated", cmd, "z", bad)
		c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=a;K8S_POD_NAME=z"
		if e := testbin.Run(c).Err(); e == nil || e.Code != 7 || !strings.Contains(e.Details, "ns-a → gone") {
			t.Errorf("%s with an unknown overflow: %+v", cmd, e)
		}
	}
}

// The operators' view: pools shows each pool's chain (table and JSON);
// validate names an unknown overflow pool and a cycle.
func TestOverflowOperators(t *testing.T) {
	dir, dataDir := t.TempDir(), t.TempDir()
	write := func(name, ipam string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, `{"cniVersion":"1.0.0","name":"`+strings.TrimSuffix(name, ".conflist")+`","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated",
			"delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"`+dataDir+`",`+ipam+`}}]}`)
		return p
	}
	good := write("good.conflist", `"pools":[{"name":"ns-a","subnet":"10.233.1.0/29","overflow":"mid"}],
		"poolDefinitions":{"mid":{"ranges":[{"subnet":"10.233.2.0/29"}],"overflow":"shared"},"shared":[{"subnet":"10.233.9.0/24"}]}`)
	if r := cliRun("validate", "--cni-path", binDir, good); r.Exit != 0 {
		t.Fatalf("validate of a good chain: exit %d %s%s", r.Exit, r.Stdout, r.Stderr)
	}
	r := cliRun("pools", "--conf", good, "-o", "json")
	var us []struct {
		Name     string   `json:"name"`
		Overflow []string `json:"overflow"`
	}
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &us) != nil {
		t.Fatalf("pools -o json: exit %d %s%s", r.Exit, r.Stdout, r.Stderr)
	}
	chains := map[string]string{}
	for _, u := range us {
		chains[u.Name] = strings.Join(u.Overflow, ",")
	}
	if chains["ns-a"] != "mid,shared" || chains["mid"] != "shared" || chains["shared"] != "" {
		t.Errorf("pools' chains = %v", chains)
	}
	if r := cliRun("pools", "--conf", good); !strings.Contains(string(r.Stdout), "OVERFLOW") || !strings.Contains(string(r.Stdout), "ns-a→mid→shared") {
		t.Errorf("pools table:\n%s", r.Stdout)
	}
	for _, tc := range []struct{ ipam, want string }{
		{`"pools":[{"name":"ns-a","subnet":"10.233.1.0/29","overflow":"gone"}]`, "ns-a → gone"},
		{`"pools":[{"name":"ns-a"}],"poolDefinitions":{"ns-a":{"ranges":[{"subnet":"10.233.1.0/29"}],"overflow":"b"},"b":{"ranges":[{"subnet":"10.233.2.0/29"}],"overflow":"ns-a"}}`, "ns-a → b → ns-a"},
		{`"pools":[{"name":"ns-a","subnet":"10.233.1.0/29","overflow":"mid"}],"poolDefinitions":{"mid":{"ranges":[{"subnet":"10.233.2.0/29"}],"overflow":"v6"},"v6":[{"subnet":"fd00:233::/120"}]}`,
			"overflow pool of another address family"},
	} {
		f := write("bad.conflist", tc.ipam)
		if r := cliRun("validate", "--cni-path", binDir, f); r.Exit == 0 || !strings.Contains(string(r.Stdout)+string(r.Stderr), tc.want) {
			t.Errorf("validate %s: exit %d, want a problem naming %q:\n%s%s", tc.ipam, r.Exit, tc.want, r.Stdout, r.Stderr)
		}
	}
}

// A chain that leaves its address family: an ADD learns it when it spills
// (the chain's ranges are read then), with 7 naming the chain, and
// reserves nothing; until then the first pool serves as usual.
func TestOverflowFamilyChange(t *testing.T) {
	dataDir := t.TempDir()
	conf := []byte(`{"cniVersion":"1.1.0","name":"fam","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"` + dataDir + `",
		"pools":[{"name":"v4","subnet":"10.234.7.0/30","overflow":"v6"}],
		"poolDefinitions":{"v6":[{"subnet":"fd00:234::/120"}]}}}`)
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "f0", conf)) // 10.234.7.2, the /30's one address
	r := testbin.Run(call("ipam-delegated", "ADD", "f2", conf))
	if e := r.Err(); e == nil || e.Code != 7 || !strings.Contains(e.Details, "v4 → v6") || !strings.Contains(e.Msg, "family") {
		t.Fatalf("ADD spilling into another family: %+v (%s)", e, r.Stdout)
	}
	if des, _ := os.ReadDir(filepath.Join(dataDir, "_pools", "v6")); len(des) > 0 {
		for _, de := range des {
			if strings.Contains(de.Name(), ":") {
				t.Errorf("the refused ADD reserved %s", de.Name())
			}
		}
	}
	testbin.MustSucceed(t, call("ipam-delegated", "DEL", "f0", conf))
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "f3", conf)) // room again in v4
}

// An ADD at the head of a chain with room locks only the head: the
// overflow pool's lock, held here, stops only the ADDs that need that
// pool (one that spills, the retried ADD of one that spilled, a count at
// the quota). Spill records go with DEL and GC.
func TestOverflowHeadsAlone(t *testing.T) {
	dataDir := t.TempDir()
	// conf is the network config with the selection's quota (nil: none)
	// and GC's valid attachments (nil: none).
	conf := func(quota map[string]any, valid ...string) []byte {
		prev := map[string]any{"cniVersion": "1.1.0", "pools": []map[string]any{{"name": "h", "overflow": "o"}}}
		if quota != nil {
			prev["quota"] = quota
		}
		m := map[string]any{"cniVersion": "1.1.0", "name": "heads",
			"ipam": map[string]any{"type": "ipam-da-pools", "dataDir": dataDir, "lockTimeout": "300ms", "poolDefinitions": map[string]any{
				"h": []map[string]string{{"subnet": "10.233.1.0/29", "rangeStart": "10.233.1.2", "rangeEnd": "10.233.1.3"}},
				"o": []map[string]string{{"subnet": "10.233.9.0/29"}},
			}},
			"prevResult": prev}
		if valid != nil {
			var atts []map[string]string
			for _, cid := range valid {
				atts = append(atts, map[string]string{"containerID": cid, "ifname": "eth0"})
			}
			m["cni.dev/valid-attachments"] = atts
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain := conf(nil)
	run := func(cmd, cid string, c []byte) testbin.Reply {
		t.Helper()
		return testbin.Run(call("ipam-da-pools", cmd, cid, c))
	}
	add := func(cid string, c []byte, want string) {
		t.Helper()
		r := run("ADD", cid, c)
		if r.Exit != 0 {
			t.Fatalf("ADD %s: %s %s", cid, r.Stdout, r.Stderr)
		}
		if got := parseResult(t, r.Stdout).IPs[0].Address; got != want {
			t.Fatalf("ADD %s: %s, want %s", cid, got, want)
		}
	}
	fails := func(cmd, cid string, c []byte, code uint) {
		t.Helper()
		if er := run(cmd, cid, c).Err(); er == nil || er.Code != code {
			t.Fatalf("%s %s: %v, want code %d", cmd, cid, er, code)
		}
	}
	spillDir := filepath.Join(dataDir, "_pools", "h", "_spill")
	records := func() int {
		t.Helper()
		des, err := os.ReadDir(spillDir)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return len(des)
	}
	lockO := func() func() {
		t.Helper()
		dir := filepath.Join(dataDir, "_pools", "o")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	}

	unlock := lockO()
	add("c1", plain, "10.233.1.2/29")
	add("c2", plain, "10.233.1.3/29")
	fails("ADD", "c3", plain, 11) // h is full: o's lock is needed
	unlock()
	add("c3", plain, "10.233.9.2/29")
	if records() != 1 {
		t.Fatalf("%d spill records after a spill, want 1", records())
	}
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "c1", plain))
	unlock = lockO()
	// Retried while h has room: c3's record says it may hold an
	// address in o, which only o's lock can tell.
	fails("ADD", "c3", plain, 11)
	unlock()
	fails("ADD", "c3", plain, 102)
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "c3", plain))
	if records() != 0 {
		t.Fatalf("%d spill records after DEL, want 0", records())
	}
	add("c4", plain, "10.233.1.2/29")
	add("c5", plain, "10.233.9.3/29")
	testbin.MustSucceed(t, call("ipam-da-pools", "GC", "", conf(nil, "c2", "c4")))
	if records() != 0 {
		t.Fatalf("%d spill records after GC, want 0", records())
	}

	// A quota's count reads o without its lock, and refuses only once
	// the count is taken under every lock.
	quota := conf(map[string]any{"tenant": "team=t", "rule": "rules[0]", "max": 3})
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "c4", plain))
	add("q1", quota, "10.233.1.2/29") // 1 of 3; h is full again
	add("q2", quota, "10.233.9.4/29") // 2 of 3, in o (its cursor moved on)
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "c2", plain))
	unlock = lockO()
	add("q3", quota, "10.233.1.3/29") // 3 of 3, o counted unlocked
	fails("ADD", "q4", quota, 11)     // at the quota: o's lock is needed
	unlock()
	fails("ADD", "q4", quota, 106)

	// The operators' gc removes the records of what it does not keep.
	add("g1", plain, "10.233.9.5/29")
	if records() != 2 { // q2's and g1's
		t.Fatalf("%d spill records after g1 spilled, want 2", records())
	}
	testbin.MustSucceed(t, testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: []string{"gc", "--data-dir", dataDir, "--pool", "h",
		"--keep", "q1", "--keep", "q2", "--keep", "q3", "--apply"}})
	if records() != 1 {
		t.Fatalf("%d spill records after cniplugins gc kept q2, want 1", records())
	}
}
