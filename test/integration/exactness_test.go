package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// hostLocal turns a call of ours into the same call of Debian's host-local.
func hostLocal(c testbin.Call) testbin.Call {
	c.Plugin, c.Path = filepath.Base(upstreamHostLocal), filepath.Dir(upstreamHostLocal)
	return c
}

// exactConf is a standalone config with two range sets (IPv4 and IPv6)
// in dataDir; extra goes into ipam.
func exactConf(version, dataDir, extra string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":%q,"name":"exact","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.70.0.0/29"}],[{"subnet":"fd70::/125"}]],"routes":[{"dst":"0.0.0.0/0"}]%s}}`, version, dataDir, extra))
}

// snapshot is a state directory's files and contents ("" when missing).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return ""
	}
	return stateFiles(t, dir)
}

// Item 1: CNI_ARGS follows the cni library's rules on ADD, DEL and CHECK,
// as host-local applies them: the same calls succeed and fail on both
// sides; ours fails with code 4 naming the pair or key, and changes
// nothing on disk.
func TestCNIArgsLikeHostLocal(t *testing.T) {
	needHostLocal(t)
	cases := []struct {
		args  string
		names string // what our error must name; "" when the call succeeds
	}{
		{"", ""},
		{"IP=10.70.0.5", ""},
		{"IP=10.70.0.5/29", ""},
		{"IP=", ""},
		{"IP=10.70.0.4;IP=10.70.0.5", ""},
		{"IgnoreUnknown=1;FOO=bar", ""},
		{"IgnoreUnknown=TRUE;FOO=bar", ""},
		{"FOO=bar;IgnoreUnknown=true", ""},
		{"IgnoreUnknown=0;IgnoreUnknown=1;FOO=x", ""},
		{"IgnoreUnknown=1;=x", ""},
		{"K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;IgnoreUnknown=1", ""},
		{"FOO=bar", `"FOO"`},
		{"K8S_POD_NAME=p", "K8S_POD_NAME"},
		{"ip=10.70.0.5", `"ip"`},
		{"IgnoreUnknown=0;FOO=bar", `"FOO"`},
		{"IgnoreUnknown=1;IgnoreUnknown=0;FOO=x", `"FOO"`},
		{"IgnoreUnknown=maybe;FOO=x", "IgnoreUnknown=maybe"},
		{"IgnoreUnknown=yes", "IgnoreUnknown=yes"},
		{"IgnoreUnknown=", "IgnoreUnknown="},
		{";;;", "KEY=VALUE"},
		{"IP=10.70.0.5;", "KEY=VALUE"},
		{"A=b=c", "A=b=c"},
		{"novalue", "novalue"},
		{"=x", `""`},
		{"IP=not-an-ip", "IP=not-an-ip"},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"ADD", "DEL", "CHECK"} {
			t.Run(cmd+" "+tc.args, func(t *testing.T) {
				ours, theirs := t.TempDir(), t.TempDir()
				run := func(dataDir string, hl bool) (testbin.Reply, string, string) {
					conf := exactConf("1.0.0", dataDir, "")
					c := call("ipam-da-pools", "ADD", "c1", conf)
					if hl {
						c = hostLocal(c)
					}
					if cmd != "ADD" {
						added := testbin.MustSucceed(t, c)
						c.Stdin = withPrevResult(t, conf, added.Stdout)
					}
					c.Command, c.Args = cmd, tc.args
					before := snapshot(t, filepath.Join(dataDir, "exact"))
					r := testbin.Run(c)
					return r, before, snapshot(t, filepath.Join(dataDir, "exact"))
				}
				r, before, after := run(ours, false)
				h, _, hAfter := run(theirs, true)
				if (r.Exit == 0) != (h.Exit == 0) {
					t.Fatalf("ours exit %d (%s), host-local exit %d (%s)", r.Exit, r.Stdout, h.Exit, h.Stdout)
				}
				if (tc.names == "") != (r.Exit == 0) {
					t.Fatalf("exit %d: %s", r.Exit, r.Stdout)
				}
				if r.Exit != 0 {
					if e := r.Err(); e.Code != 4 || !strings.Contains(e.Msg+" "+e.Details, tc.names) {
						t.Errorf("error %+v, want code 4 naming %s", e, tc.names)
					}
					if after != before {
						t.Errorf("a refused %s changed the state:\nbefore:\n%s\nafter:\n%s", cmd, before, after)
					}
					return
				}
				if after != hAfter {
					t.Errorf("state differs from host-local's:\nours:\n%s\nhost-local:\n%s", after, hAfter)
				}
			})
		}
	}
}

// Through a chain every delegate checks its own keys: the selector fails
// first on an unknown key (nothing is allocated), IgnoreUnknown lets it
// through, and IP reaches the allocator. ipam-delegated itself reads none.
func TestCNIArgsThroughChain(t *testing.T) {
	dataDir := t.TempDir()
	conf := chainConf("args-net", dataDir, `[{"name":"argpool","subnet":"10.71.0.0/24"}]`)
	pool := filepath.Join(dataDir, "_pools", "argpool")
	for _, tt := range []struct {
		plugin, args string
		code         uint
		names        string
		addr         string
	}{
		{"ipam-delegated", "FOO=bar", 4, "ipam-ds-static: unknown CNI_ARGS key \"FOO\"", ""},
		{"ipam-ds-static", "FOO=bar", 4, "FOO", ""},
		{"ipam-delegated", "IP=10.71.0.9;", 4, "KEY=VALUE", ""},
		{"ipam-delegated", "IgnoreUnknown=1;FOO=bar;IP=10.71.0.9", 0, "", "10.71.0.9/24"},
	} {
		c := call(tt.plugin, "ADD", "chain-"+fmt.Sprint(tt.code), conf)
		c.Args = tt.args
		r := testbin.Run(c)
		if tt.code != 0 {
			if e := r.Err(); e == nil || e.Code != tt.code || !strings.Contains(e.Msg+" "+e.Details, tt.names) {
				t.Errorf("%s %q: %+v, want %d naming %s", tt.plugin, tt.args, e, tt.code, tt.names)
			}
			if _, err := os.Stat(pool); !os.IsNotExist(err) {
				t.Errorf("%s %q: the pool directory exists after a refused ADD", tt.plugin, tt.args)
			}
			continue
		}
		if r.Exit != 0 {
			t.Fatalf("%s %q: %s", tt.plugin, tt.args, r.Stdout)
		}
		if got := parseResult(t, r.Stdout).IPs[0].Address; got != tt.addr {
			t.Errorf("%s %q: address %s, want %s", tt.plugin, tt.args, got, tt.addr)
		}
	}
}

// Item 2: CHECK without addresses in prevResult is host-local's: success
// when the attachment holds an address in the network, else code 3.
func TestCheckWithoutPrevResultIPs(t *testing.T) {
	needHostLocal(t)
	ours, theirs := t.TempDir(), t.TempDir()
	for _, d := range []string{ours, theirs} {
		c := call("ipam-da-pools", "ADD", "held", exactConf("1.0.0", d, ""))
		if d == theirs {
			c = hostLocal(c)
		}
		testbin.MustSucceed(t, c)
	}
	for _, tt := range []struct {
		name, id, prev string
		ok             bool
	}{
		{"no prevResult", "held", "", true},
		{"prevResult without ips", "held", `{"cniVersion":"1.0.0"}`, true},
		{"another container", "other", "", false},
		{"empty ips, unknown attachment", "nobody", `{"cniVersion":"1.0.0","ips":[]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range []string{ours, theirs} {
				conf := exactConf("1.0.0", d, "")
				if tt.prev != "" {
					conf = withPrevResult(t, conf, []byte(tt.prev))
				}
				c := call("ipam-da-pools", "CHECK", tt.id, conf)
				if d == theirs {
					c = hostLocal(c)
				}
				r := testbin.Run(c)
				if (r.Exit == 0) != tt.ok {
					t.Errorf("%s: exit %d %s, want success %v", c.Plugin, r.Exit, r.Stdout, tt.ok)
				}
				if d == ours && !tt.ok {
					if e := r.Err(); e.Code != 3 {
						t.Errorf("error %+v, want code 3", e)
					}
				}
			}
		})
	}
	// Through a chain (pool mode), the same rule per pool.
	dataDir := t.TempDir()
	conf := chainConf("check-net", dataDir, `[{"name":"ck","subnet":"10.75.0.0/24"}]`)
	testbin.MustSucceed(t, call("ipam-delegated", "ADD", "held", conf))
	testbin.MustSucceed(t, call("ipam-delegated", "CHECK", "held", conf))
	if e := testbin.Run(call("ipam-delegated", "CHECK", "nobody", conf)).Err(); e == nil || e.Code != 3 {
		t.Errorf("chain CHECK of an unknown attachment: %+v, want 3", e)
	}
}

// Item 3: a failed ADD leaves the state directory exactly as it was,
// cursors included, and the next ADD gets the address it would have got.
func TestFailedAddChangesNothing(t *testing.T) {
	dataDir := t.TempDir()
	// Set 1 holds one address (fd71::2, gateway fd71::1).
	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"undo","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.72.0.0/28"}],[{"subnet":"fd71::/126","rangeEnd":"fd71::2"}]]}}`, dataDir))
	dir := filepath.Join(dataDir, "undo")
	failing := []struct {
		name, args string
		code       uint
	}{
		{"second set's requested address is its gateway (no cursor yet)", "IP=fd71::1", 101},
		{"second set exhausted", "", 100},
		{"second set's requested address taken", "IP=fd71::2", 101},
	}
	for i, f := range failing {
		before := snapshot(t, dir)
		c := call("ipam-da-pools", "ADD", fmt.Sprintf("fail%d", i), conf)
		c.Args = f.args
		if e := testbin.Run(c).Err(); e == nil || e.Code != f.code {
			t.Fatalf("%s: %+v, want %d", f.name, e, f.code)
		}
		after := snapshot(t, dir)
		if i == 0 {
			// The ADD created the directory and its lock, as host-local does.
			if after != `lock=""` {
				t.Errorf("%s: state %s, want only the lock", f.name, after)
			}
		} else if after != before {
			t.Errorf("%s changed the state:\nbefore:\n%s\nafter:\n%s", f.name, before, after)
		}
		if i == 0 {
			r := testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "first", conf))
			if got := parseResult(t, r.Stdout).addrs(); got != "10.72.0.2/28 gw 10.72.0.1, fd71::2/126 gw fd71::1" {
				t.Fatalf("first ADD after a failed one: %s", got)
			}
		}
	}
	// The cursor of set 0 still says .2: a DEL and the next ADD get .3.
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "first", conf))
	r := testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "next", conf))
	if got := parseResult(t, r.Stdout).IPs[0].Address; got != "10.72.0.3/28" {
		t.Errorf("next ADD got %s, want 10.72.0.3/28 (the failed ADDs must not move the cursor)", got)
	}
}

// Items 4 and 5: configs host-local accepts are accepted. A gateway
// outside the subnet works as in host-local; a range that includes the
// network and broadcast addresses never hands them out, and every ADD
// warns once on stderr.
func TestHostLocalConfigsAccepted(t *testing.T) {
	needHostLocal(t)
	gwConf := func(d string) []byte {
		return []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"gw","ipam":{"type":"ipam-da-pools","dataDir":%q,
			"ranges":[[{"subnet":"10.73.0.0/29","gateway":"169.254.1.1"}]]}}`, d))
	}
	ours, theirs := t.TempDir(), t.TempDir()
	for i := range 3 {
		id := fmt.Sprintf("g%d", i)
		r := testbin.MustSucceed(t, call("ipam-da-pools", "ADD", id, gwConf(ours)))
		h := testbin.MustSucceed(t, hostLocal(call("ipam-da-pools", "ADD", id, gwConf(theirs))))
		if got, want := parseResult(t, r.Stdout).addrs(), parseResult(t, h.Stdout).addrs(); got != want {
			t.Errorf("ADD %d: %s, host-local %s", i, got, want)
		}
	}
	if a, b := snapshot(t, filepath.Join(ours, "gw")), snapshot(t, filepath.Join(theirs, "gw")); a != b {
		t.Errorf("state differs:\n%s\nhost-local:\n%s", a, b)
	}

	dataDir := t.TempDir()
	edge := []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"edge","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.74.0.0/29","rangeStart":"10.74.0.0","rangeEnd":"10.74.0.7"}]]}}`, dataDir))
	for _, ip := range []string{"10.74.0.0", "10.74.0.7"} {
		c := call("ipam-da-pools", "ADD", "req", edge)
		c.Args = "IP=" + ip
		if e := testbin.Run(c).Err(); e == nil || e.Code != 101 {
			t.Errorf("request for %s: %+v, want 101", ip, e)
		}
	}
	var got []string
	for i := 0; ; i++ {
		if i > 5 {
			t.Fatalf("still allocating after %v: the range has 5 addresses to hand out", got)
		}
		r := testbin.Run(call("ipam-da-pools", "ADD", fmt.Sprintf("e%d", i), edge))
		lines := strings.Count(string(r.Stderr), "\n")
		if strings.Count(string(r.Stderr), "never handed out") != 1 || (r.Exit == 0 && lines != 1) {
			t.Errorf("ADD %d: stderr %q, want exactly one warning line", i, r.Stderr)
		}
		if r.Exit != 0 {
			if e := r.Err(); e.Code != 100 {
				t.Fatalf("ADD %d: %+v", i, e)
			}
			break
		}
		got = append(got, parseResult(t, r.Stdout).IPs[0].Address)
	}
	if want := "10.74.0.2/29 10.74.0.3/29 10.74.0.4/29 10.74.0.5/29 10.74.0.6/29"; strings.Join(got, " ") != want {
		t.Errorf("handed out %v, want %s", got, want)
	}
	// DEL does not warn: it needs no ranges.
	if r := testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "e0", edge)); len(r.Stderr) != 0 {
		t.Errorf("DEL stderr: %q", r.Stderr)
	}
}

// Items 6 and 8: an IPv4-mapped IPv6 subnet, more than 64 range sets or
// more than 64 pools are code 7 naming the field, refused before anything
// touches the disk.
func TestRefusedBeforeDisk(t *testing.T) {
	sets := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`[{"subnet":"10.%d.%d.0/24"}]`, 100+i/256, i%256)
		}
		return strings.Join(s, ",")
	}
	pools := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`{"name":"p%d","subnet":"10.%d.%d.0/24"}`, i, 100+i/256, i%256)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	for _, tt := range []struct {
		name, plugin, conf, names string
	}{
		{"v4-mapped subnet", "ipam-da-pools", `"type":"ipam-da-pools","ranges":[[{"subnet":"::ffff:10.77.0.0/120"}]]`, "ipam.ranges[0][0].subnet=::ffff:10.77.0.0/120"},
		{"v4-mapped legacy subnet", "ipam-da-pools", `"type":"ipam-da-pools","subnet":"::ffff:10.77.0.0/120"`, "ipam.subnet"},
		{"65 range sets", "ipam-da-pools", `"type":"ipam-da-pools","ranges":[` + sets(65) + `]`, "at most 64 range sets"},
		{"20,000 range sets", "ipam-da-pools", `"type":"ipam-da-pools","ranges":[` + sets(20000) + `]`, "20000 range sets"},
		{"65 pools", "ipam-delegated", `"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"pools":` + pools(65), "at most 64 pools"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "state")
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"refused","ipam":{"dataDir":%q,%s}}`, dataDir, tt.conf)
			e := testbin.Run(call(tt.plugin, "ADD", "r", []byte(conf))).Err()
			if e == nil || e.Code != 7 || !strings.Contains(e.Msg+" "+e.Details, tt.names) {
				t.Errorf("%+v, want code 7 naming %s", e, tt.names)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("dataDir created by a refused ADD")
			}
		})
	}
	// 64 is allowed.
	dataDir := t.TempDir()
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"sixtyfour","ipam":{"type":"ipam-da-pools","dataDir":%q,"ranges":[%s]}}`, dataDir, sets(64))
	if n := len(parseResult(t, testbin.MustSucceed(t, call("ipam-da-pools", "ADD", "r", []byte(conf))).Stdout).IPs); n != 64 {
		t.Errorf("64 range sets: %d addresses", n)
	}
}

// Item 7: cniVersion 0.1.0 and 0.2.0, ADD and DEL, give host-local's
// result (the old ip4/ip6 shape) and state, standalone; the chain works
// at 0.2.0 too.
func TestOldSpecVersions(t *testing.T) {
	needHostLocal(t)
	for _, v := range []string{"0.1.0", "0.2.0"} {
		t.Run(v, func(t *testing.T) {
			ours, theirs := t.TempDir(), t.TempDir()
			var outs [2]string
			for i, d := range []string{ours, theirs} {
				conf := exactConf(v, d, "")
				add, del := call("ipam-da-pools", "ADD", "old", conf), call("ipam-da-pools", "DEL", "old", conf)
				if d == theirs {
					add, del = hostLocal(add), hostLocal(del)
				}
				outs[i] = compact(testbin.MustSucceed(t, add).Stdout)
				if !strings.Contains(outs[i], `"ip4":{"gateway":"10.70.0.1","ip":"10.70.0.2/29"`) {
					t.Errorf("%s result %s: want the ip4 shape", add.Plugin, outs[i])
				}
				testbin.MustSucceed(t, del)
				if got := reservations(t, filepath.Join(d, "exact")); got != "" {
					t.Errorf("%s: reservations after DEL: %s", add.Plugin, got)
				}
			}
			if outs[0] != outs[1] {
				t.Errorf("result %s, host-local %s", outs[0], outs[1])
			}
			if a, b := snapshot(t, filepath.Join(ours, "exact")), snapshot(t, filepath.Join(theirs, "exact")); a != b {
				t.Errorf("state differs:\n%s\nhost-local:\n%s", a, b)
			}
		})
	}
	dataDir := t.TempDir()
	conf := []byte(strings.Replace(string(chainConf("old-chain", dataDir, `[{"name":"o4","subnet":"10.76.0.0/24"},{"name":"o6","subnet":"fd76::/64"}]`)),
		`"cniVersion":"1.1.0"`, `"cniVersion":"0.2.0"`, 1))
	add := testbin.MustSucceed(t, call("ipam-delegated", "ADD", "oc", conf))
	var res struct {
		CNIVersion string `json:"cniVersion"`
		IP4, IP6   struct {
			IP string `json:"ip"`
		}
	}
	if err := json.Unmarshal(add.Stdout, &res); err != nil || res.CNIVersion != "0.2.0" || res.IP4.IP != "10.76.0.2/24" || res.IP6.IP != "fd76::2/64" {
		t.Fatalf("chain ADD at 0.2.0: %s (%v)", add.Stdout, err)
	}
	testbin.MustSucceed(t, call("ipam-delegated", "DEL", "oc", withPrevResult(t, conf, add.Stdout)))
	for _, p := range []string{"o4", "o6"} {
		if got := reservations(t, filepath.Join(dataDir, "_pools", p)); got != "" {
			t.Errorf("pool %s after DEL: %s", p, got)
		}
	}
}
