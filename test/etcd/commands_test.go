package etcd

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func v4Ranges(subnet string) [][]map[string]string {
	return [][]map[string]string{{{"subnet": subnet}}}
}

// gcConf is conf as GC sends it: no prevResult addresses, the valid
// attachments listed.
func gcConf(t *testing.T, conf []byte, valid ...string) []byte {
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatal(err)
	}
	refs := []map[string]string{}
	for _, v := range valid {
		// "cid" is cid on eth0; "cid@" an entry without an ifname.
		cid, ifname, cut := strings.Cut(v, "@")
		ref := map[string]string{"containerID": cid}
		if !cut {
			ifname = "eth0"
		}
		if ifname != "" {
			ref["ifname"] = ifname
		}
		refs = append(refs, ref)
	}
	m["cni.dev/valid-attachments"] = refs
	return mustJSON(t, m)
}

// TestGC: GC on host A releases A's attachments that are not valid, keeps
// the valid one, and never touches host B's, valid or not.
func TestGC(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	confA := poolConf(t, a, sharedPool("10.214.6.0/24"), nil)
	confB := poolConf(t, b, sharedPool("10.214.6.0/24"), nil)
	for _, cid := range []string{"a1", "a2", "a3"} {
		mustAdd(t, cid, confA)
	}
	_, bAddrs := mustAdd(t, "b1", confB)
	mustRun(t, "GC", "", gcConf(t, confA, "a1"))
	var left []string
	for _, k := range keys(t) {
		left = append(left, strings.TrimPrefix(k, prefix(t)))
	}
	slices.Sort(left)
	want := 4 // a1 and b1: claim and index key each
	if len(left) != want || !strings.Contains(strings.Join(left, " "), "node/host-a/pool/shared/a1/eth0/0") ||
		!strings.Contains(strings.Join(left, " "), "node/host-b/pool/shared/b1/eth0/0") ||
		!strings.Contains(strings.Join(left, " "), "ip/pool/shared/"+bAddrs[0].String()) {
		t.Fatalf("after GC on host-a keeping a1: %v", left)
	}
	// GC on B with nothing valid frees b1 only.
	mustRun(t, "GC", "", gcConf(t, confB))
	if n := len(keys(t)); n != 2 {
		t.Fatalf("after GC on host-b: %d keys, want a1's 2", n)
	}
	wantCode(t, run1("GC", "", confA), 7) // no valid-attachments at all: refused
	// An entry without an ifname keeps every attachment of its container,
	// as in every GC (alloc.KeepSet).
	mustRun(t, "GC", "", gcConf(t, confA, "a1@"))
	if n := len(keys(t)); n != 2 {
		t.Fatalf("after GC on host-a keeping a1 without an ifname: %d keys, want a1's 2", n)
	}
	mustRun(t, "GC", "", gcConf(t, confA))
	wantNoKeys(t)
}

// TestStatusAndExhaustion: a pool with two addresses; the third ADD is 100
// naming it, STATUS is 50 until an address is released.
func TestStatusAndExhaustion(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	pools := []map[string]any{{"name": "tiny", "subnet": "10.214.7.0/29", "rangeStart": "10.214.7.2", "rangeEnd": "10.214.7.3"}}
	conf := poolConf(t, h, pools, nil)
	mustRun(t, "STATUS", "", conf)
	r1, _ := mustAdd(t, "t1", conf)
	mustAdd(t, "t2", conf)
	e := wantCode(t, run1("ADD", "t3", conf), 100)
	if !strings.Contains(e.Details, "tiny") {
		t.Errorf("100 does not name the pool: %s", e.Details)
	}
	wantCode(t, run1("STATUS", "", conf), 50)
	mustRun(t, "DEL", "t3", conf) // the runtime's DEL after the failed ADD
	wantCode(t, run1("STATUS", "", conf), 50)
	mustRun(t, "DEL", "t1", withPrev(t, conf, r1.Stdout))
	mustRun(t, "STATUS", "", conf)
	_, as := mustAdd(t, "t3", conf)
	if as[0] != netip.MustParseAddr("10.214.7.2") && as[0] != netip.MustParseAddr("10.214.7.3") {
		t.Fatalf("got %s outside the range", as[0])
	}
	mustRun(t, "DEL", "t2", conf)
	mustRun(t, "DEL", "t3", conf)
	wantNoKeys(t)

	// Standalone, two range sets in one network: the second is full, so
	// an ADD fails with 100 and undoes its claim in the first. Undoing
	// it frees an address of the first range set only: STATUS still
	// reports the second one exhausted.
	sconf := standalone(t, h, [][]map[string]string{{{"subnet": "10.214.25.0/24"}}, {{"subnet": "10.214.26.0/30"}}}, nil)
	mustAdd(t, "s1", sconf)
	wantCode(t, run1("ADD", "s2", sconf), 100)
	e = wantCode(t, run1("STATUS", "", sconf), 50)
	if !strings.Contains(e.Details, "10.214.26") {
		t.Errorf("STATUS names %s, want the second range set", e.Details)
	}
	mustRun(t, "DEL", "s2", sconf)
	wantCode(t, run1("STATUS", "", sconf), 50)
	mustRun(t, "DEL", "s1", sconf)
	mustRun(t, "STATUS", "", sconf)
	wantNoKeys(t)
}

// TestCheck: CHECK passes for the holder, is 3 for another attachment, for
// the same attachment on another node and after DEL.
func TestCheck(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	conf := standalone(t, a, v4Ranges("10.214.8.0/24"), nil)
	r, _ := mustAdd(t, "k1", conf)
	withRes := withPrev(t, conf, r.Stdout)
	mustRun(t, "CHECK", "k1", withRes)
	mustRun(t, "CHECK", "k1", conf) // no addresses given: holds any
	wantCode(t, run1("CHECK", "k2", withRes), 3)
	wantCode(t, run1("CHECK", "k1", withPrev(t, standalone(t, b, v4Ranges("10.214.8.0/24"), nil), r.Stdout)), 3)
	mustRun(t, "DEL", "k1", withRes)
	wantCode(t, run1("CHECK", "k1", withRes), 3)
	wantCode(t, run1("CHECK", "k1", conf), 3)
	wantNoKeys(t)
}

// TestRequested: CNI_ARGS IP, args.cni.ips and a Pool's requested-ip are
// honoured; a taken or out-of-range request is 101.
func TestRequested(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := standalone(t, h, v4Ranges("10.214.10.0/24"), nil)
	r := call("ipam-da-etcd", "ADD", "q1", conf, "IP=10.214.10.77")
	if r.Exit != 0 || addrsOf(t, r.Stdout)[0] != netip.MustParseAddr("10.214.10.77") {
		t.Fatalf("CNI_ARGS IP: %s %s", r.Stdout, r.Stderr)
	}
	wantCode(t, call("ipam-da-etcd", "ADD", "q2", conf, "IP=10.214.10.77"), 101)
	wantCode(t, call("ipam-da-etcd", "ADD", "q3", conf, "IP=10.214.11.5"), 101)
	wantCode(t, call("ipam-da-etcd", "ADD", "q4", conf, "IP=10.214.10.1"), 101) // the gateway
	var m map[string]any
	_ = json.Unmarshal(conf, &m)
	m["args"] = map[string]any{"cni": map[string]any{"ips": []string{"10.214.10.78"}}}
	_, as := mustAdd(t, "q5", mustJSON(t, m))
	if as[0] != netip.MustParseAddr("10.214.10.78") {
		t.Fatalf("args.cni.ips: got %s", as[0])
	}
	pools := []map[string]any{{"name": "req", "subnet": "10.214.12.0/24", "requested-ip": "10.214.12.9"}}
	pconf := poolConf(t, h, pools, nil)
	_, as = mustAdd(t, "q6", pconf)
	if as[0] != netip.MustParseAddr("10.214.12.9") {
		t.Fatalf("requested-ip: got %s", as[0])
	}
	for _, cid := range []string{"q1", "q2", "q3", "q4", "q5"} {
		mustRun(t, "DEL", cid, conf)
	}
	mustRun(t, "DEL", "q6", pconf)
	wantNoKeys(t)
}

// TestDuplicate: a second ADD of one attachment is 102, standalone and in
// a pool, and the failed ADD's DEL frees the first address (the runtime
// tears the attachment down).
func TestDuplicate(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	for _, conf := range [][]byte{
		standalone(t, h, v4Ranges("10.214.13.0/24"), nil),
		poolConf(t, h, sharedPool("10.214.14.0/24"), nil),
	} {
		_, first := mustAdd(t, "d1", conf)
		e := wantCode(t, run1("ADD", "d1", conf), 102)
		if !strings.Contains(e.Details, first[0].String()) {
			t.Errorf("102 does not name the held address %s: %s", first[0], e.Details)
		}
		// A requested address does not get around it either.
		wantCode(t, call("ipam-da-etcd", "ADD", "d1", conf, "IP="+first[0].Next().String()), 102)
		mustRun(t, "DEL", "d1", conf)
		mustRun(t, "DEL", "d1", conf) // idempotent
	}
	wantNoKeys(t)
}

// TestDualStack: standalone with a v4 and a v6 range set gives one address
// of each; DEL frees both in one go.
func TestDualStack(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := standalone(t, h, [][]map[string]string{{{"subnet": "10.214.15.0/24"}}, {{"subnet": "fd00:214:15::/64"}}}, nil)
	r, as := mustAdd(t, "ds", conf)
	if len(as) != 2 || !as[0].Is4() || !as[1].Is6() {
		t.Fatalf("got %v", as)
	}
	mustRun(t, "CHECK", "ds", withPrev(t, conf, r.Stdout))
	if n := len(keys(t)); n != 4 {
		t.Fatalf("%d keys, want 4", n)
	}
	mustRun(t, "DEL", "ds", conf)
	wantNoKeys(t)
}

// TestExclusion uses Pool exclude (SPEC "Pool object"), in the Pool object
// and in a poolDefinitions entry: an excluded address is never handed out,
// even when the pool runs dry around it, and requesting one is 101.
func TestExclusion(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	pools := []map[string]any{{"name": "ex", "subnet": "10.214.16.0/28", "exclude": []string{"10.214.16.2", "10.214.16.4/30", "10.214.16.9"}}}
	conf := poolConf(t, h, pools, nil)
	excluded := func(a netip.Addr) bool {
		return a == netip.MustParseAddr("10.214.16.2") || a == netip.MustParseAddr("10.214.16.9") ||
			netip.MustParsePrefix("10.214.16.4/30").Contains(a)
	}
	got := map[netip.Addr]bool{}
	for i := 0; ; i++ {
		if i > 7 {
			t.Fatalf("still allocating after %d addresses (%v): 7 are allocatable", i, got)
		}
		r := run1("ADD", fmt.Sprintf("x%d", i), conf)
		if r.Exit != 0 {
			wantCode(t, r, 100)
			break
		}
		a := addrsOf(t, r.Stdout)[0]
		if excluded(a) {
			t.Fatalf("excluded address %s handed out", a)
		}
		got[a] = true
	}
	// .1 gateway, .15 broadcast: .3 .8 .10-.14 are allocatable.
	if len(got) != 7 {
		t.Fatalf("handed out %d addresses (%v), want 7", len(got), got)
	}
	wantCode(t, call("ipam-da-etcd", "ADD", "xr", poolConf(t, h, []map[string]any{{"name": "ex2", "subnet": "10.214.17.0/28", "exclude": []string{"10.214.17.5"}}}, nil), "IP=10.214.17.5"), 101)
	// The same exclusion from ipam.poolDefinitions.
	var m map[string]any
	_ = json.Unmarshal(poolConf(t, h, []map[string]any{{"name": "ex3"}}, nil), &m)
	m["ipam"].(map[string]any)["poolDefinitions"] = map[string]any{"ex3": map[string]any{
		"ranges": []map[string]string{{"subnet": "10.214.18.0/29"}}, "exclude": []string{"10.214.18.2/31", "10.214.18.4"}}}
	dconf := mustJSON(t, m)
	for i := 0; i < 2; i++ {
		_, as := mustAdd(t, fmt.Sprintf("y%d", i), dconf)
		if as[0] != netip.MustParseAddr("10.214.18.5") && as[0] != netip.MustParseAddr("10.214.18.6") {
			t.Fatalf("poolDefinitions exclude: got %s", as[0])
		}
	}
	wantCode(t, run1("ADD", "y2", dconf), 100)
}

// TestDelOnlyFreesItsOwn: a DEL whose prevResult names another
// attachment's address (a confused runtime, or the same container ID on
// another node) frees nothing of it; a prevResult that lists only some
// of the attachment's addresses still frees all of them.
func TestDelOnlyFreesItsOwn(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	conf := standalone(t, a, [][]map[string]string{{{"subnet": "10.214.24.0/24"}}, {{"subnet": "fd00:214:24::/64"}}}, nil)
	r1, _ := mustAdd(t, "o1", conf)
	withRes := withPrev(t, conf, r1.Stdout)
	mustRun(t, "DEL", "o2", withRes)                                                                                                                                // another container, same node
	mustRun(t, "DEL", "o1", withPrev(t, standalone(t, b, [][]map[string]string{{{"subnet": "10.214.24.0/24"}}, {{"subnet": "fd00:214:24::/64"}}}, nil), r1.Stdout)) // same container ID, another node
	mustRun(t, "CHECK", "o1", withRes)
	if n := len(keys(t)); n != 4 {
		t.Fatalf("%d keys, want o1's 4", n)
	}
	// prevResult with the IPv4 address only: both go.
	var res map[string]any
	_ = json.Unmarshal(r1.Stdout, &res)
	res["ips"] = res["ips"].([]any)[:1]
	mustRun(t, "DEL", "o1", withPrev(t, conf, mustJSON(t, res)))
	wantNoKeys(t)
}
