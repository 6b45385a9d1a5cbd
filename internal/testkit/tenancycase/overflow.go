// Package tenancycase holds the tenancy scenarios both allocators must
// pass through the real binary: the same steps for ipam-da-pools
// (test/integration) and ipam-da-etcd (test/etcd).
package tenancycase

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// Env is an allocator under test: Conf is its network config with
// ipam.poolDefinitions defs and, as a selector sends it,
// prevResult.pools; Run execs the allocator (cid "" for GC and STATUS).
type Env struct {
	Conf func(t *testing.T, defs map[string]any, pools []map[string]any) []byte
	Run  func(cmd, cid string, conf []byte) testbin.Reply
}

// Overflow chains a4 → b4 → c4 and a6 → b6 → c6, two addresses each.
func overflowDefs() map[string]any {
	def := func(subnet, start, end, overflow string) map[string]any {
		d := map[string]any{"ranges": []map[string]string{{"subnet": subnet, "rangeStart": start, "rangeEnd": end}}}
		if overflow != "" {
			d["overflow"] = overflow
		}
		return d
	}
	return map[string]any{
		"a4": def("10.231.1.0/29", "10.231.1.2", "10.231.1.3", "b4"),
		"b4": def("10.231.2.0/29", "10.231.2.2", "10.231.2.3", "c4"),
		"c4": def("10.231.3.0/29", "10.231.3.2", "10.231.3.3", ""),
		"a6": def("fd31:1::/120", "fd31:1::2", "fd31:1::3", "b6"),
		"b6": def("fd31:2::/120", "fd31:2::2", "fd31:2::3", "c6"),
		"c6": def("fd31:3::/120", "fd31:3::2", "fd31:3::3", ""),
	}
}

// pools are the selection: a4's chain from its definition, a6's from the
// Pool object, as a selector passes either (a6's definition says b6 as
// well: STATUS judges every defined pool by its own chain).
var pools = []map[string]any{{"name": "a4"}, {"name": "a6", "overflow": "b6"}}

// RunOverflow: overflow across three pools in both families, a retried
// ADD (102, never a second address), DEL without prevResult, CHECK,
// STATUS (50 only when every pool of a chain is full) and GC over the
// chain, and a cycle (7 on every command).
func RunOverflow(t *testing.T, e Env) {
	conf := e.Conf(t, overflowDefs(), pools)
	results := map[string][]byte{}
	add := func(cid string) []netip.Addr {
		t.Helper()
		r := e.Run("ADD", cid, conf)
		if r.Exit != 0 {
			t.Fatalf("ADD %s: %s %s", cid, r.Stdout, r.Stderr)
		}
		results[cid] = r.Stdout
		return addrs(t, r.Stdout)
	}
	want := func(cid string, got []netip.Addr, pool string) {
		t.Helper()
		if len(got) != 2 || !strings.HasPrefix(got[0].String(), "10.231."+pool+".") || !strings.HasPrefix(got[1].String(), "fd31:"+pool+"::") {
			t.Errorf("%s got %v, want pool %s of both families", cid, got, pool)
		}
	}
	code := func(cmd, cid string, c []byte, code uint, in string) {
		t.Helper()
		r := e.Run(cmd, cid, c)
		if er := r.Err(); er == nil || er.Code != code || !strings.Contains(er.Msg+" "+er.Details, in) {
			t.Errorf("%s %s: %s, want code %d mentioning %q", cmd, cid, r.Stdout, code, in)
		}
	}
	ok := func(cmd, cid string, c []byte) {
		t.Helper()
		if r := e.Run(cmd, cid, c); r.Exit != 0 {
			t.Errorf("%s %s: %s %s", cmd, cid, r.Stdout, r.Stderr)
		}
	}
	for i, pool := range []string{"1", "1", "2", "2", "3", "3"} {
		cid := "c" + string(rune('1'+i))
		want(cid, add(cid), pool)
	}
	code("ADD", "c7", conf, 100, "a4 → b4 → c4")
	code("STATUS", "", conf, 50, "")
	// Every chain's last pools have room again: STATUS is fine.
	ok("DEL", "c5", withPrev(t, conf, results["c5"]))
	ok("STATUS", "", conf)
	ok("DEL", "c1", withPrev(t, conf, results["c1"]))
	// c6 is in c4 and c6: retried, it gets 102 although a4 and a6 have room.
	code("ADD", "c6", conf, 102, "10.231.3.")
	want("c8", add("c8"), "1")
	// DEL without prevResult finds c3 in b4 and b6.
	ok("DEL", "c3", conf)
	code("CHECK", "c3", conf, 3, "")
	ok("CHECK", "c4", withPrev(t, conf, results["c4"]))
	ok("CHECK", "c4", conf)
	want("c9", add("c9"), "2")
	// GC keeping c2 frees the rest of every pool of both chains.
	ok("GC", "", withValid(t, conf, "c2"))
	for _, cid := range []string{"c4", "c6", "c8", "c9"} {
		code("CHECK", cid, conf, 3, "")
	}
	want("c10", add("c10"), "1")
	want("c11", add("c11"), "2")

	// A cycle is 7 naming the pools, on every command.
	defs := overflowDefs()
	defs["c4"].(map[string]any)["overflow"] = "a4"
	cyc := e.Conf(t, defs, pools)
	for _, cmd := range []string{"ADD", "DEL", "CHECK", "STATUS", "GC"} {
		cid := "c12"
		if cmd == "STATUS" || cmd == "GC" {
			cid = ""
		}
		c := cyc
		if cmd == "GC" {
			c = withValid(t, cyc)
		}
		code(cmd, cid, c, 7, "a4 → b4 → c4 → a4")
	}
	// An unknown overflow pool too.
	code("ADD", "c12", e.Conf(t, overflowDefs(), []map[string]any{{"name": "a4", "overflow": "nowhere"}}), 7, "nowhere")
	// A chain that leaves its family.
	code("ADD", "c12", e.Conf(t, overflowDefs(), []map[string]any{{"name": "a6", "overflow": "b4"}}), 7, "family")
}

func addrs(t *testing.T, out []byte) []netip.Addr {
	t.Helper()
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	var got []netip.Addr
	for _, ip := range res.IPs {
		p, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			t.Fatalf("result %s: %v", out, err)
		}
		got = append(got, p.Addr())
	}
	return got
}

func edit(t *testing.T, conf []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withPrev is conf with an ADD's result as prevResult, the selection's
// pools kept.
func withPrev(t *testing.T, conf, res []byte) []byte {
	return edit(t, conf, func(m map[string]any) {
		var prev map[string]any
		if err := json.Unmarshal(res, &prev); err != nil {
			t.Fatal(err)
		}
		if old, ok := m["prevResult"].(map[string]any); ok {
			prev["pools"] = old["pools"]
		}
		m["prevResult"] = prev
	})
}

// withValid is a GC's conf listing the valid attachments' eth0.
func withValid(t *testing.T, conf []byte, cids ...string) []byte {
	return edit(t, conf, func(m map[string]any) {
		valid := []map[string]string{}
		for _, cid := range cids {
			valid = append(valid, map[string]string{"containerID": cid, "ifname": "eth0"})
		}
		m["cni.dev/valid-attachments"] = valid
	})
}
