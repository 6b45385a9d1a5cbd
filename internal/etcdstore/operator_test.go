package etcdstore_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// site is one test's in-memory etcd (etcdkvfake): the unit tests need no
// etcd binary. The operators' CLI runs against real clusters in
// test/etcd.
type site struct {
	t    *testing.T
	fake *etcdkvfake.Fake
}

func newSite(t *testing.T) site { return site{t: t, fake: etcdkvfake.New(t)} }

func (s site) endpoints() string { return s.fake.URL() }

// keys are the fake's keys under prefix, sorted.
func (s site) keys(prefix string) []string { return slices.Sorted(maps.Keys(s.fake.Values(prefix))) }

// add runs ADD in-process (plugin.Run, exactly what an exec does) for
// container cid on node, in pool mode on pool P or standalone.
func (s site) add(node, cid, scope string) netip.Addr {
	t := s.t
	t.Helper()
	out := s.runIn("ADD", node, cid, scope)
	i := bytes.Index(out, []byte(`"address": "`))
	if i < 0 {
		t.Fatalf("ADD: %s", out)
	}
	rest := out[i+len(`"address": "`):]
	p := netip.MustParsePrefix(string(rest[:bytes.IndexByte(rest, '"')]))
	return p.Addr()
}

func (s site) runIn(cmd, node, cid, scope string) []byte {
	t := s.t
	t.Helper()
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"net-%s","ipam":{"type":"ipam-da-etcd","dataDir":%q,
		"etcd":{"endpoints":["%s"],"prefix":"/admin-test/%s/","nodeName":%q},
		"ranges":[[{"subnet":"10.214.30.0/24"}]],"poolDefinitions":{"p":[{"subnet":"10.214.31.0/24"}]}}`,
		scope, t.TempDir(), s.endpoints(), t.Name(), node)
	if scope == "p" {
		conf += `,"prevResult":{"cniVersion":"1.1.0","pools":[{"name":"p"}]}`
	}
	conf += "}"
	var stdout, stderr bytes.Buffer
	env := []string{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent"}
	if code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("%s %s: %s %s", cmd, cid, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// admin is an Operator for the test's keys.
func (s site) admin() *Operator {
	t := s.t
	a, err := OpenOperator(clusteraccess.Access{Endpoints: []string{s.endpoints()}, Prefix: "/admin-test/" + t.Name() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdminLeasesReleaseGC(t *testing.T) {
	st := newSite(t)
	a1 := st.add("gone", "g1", "p")
	st.add("gone", "g2", "p")
	g3 := st.add("gone", "g3", "n")
	b1 := st.add("alive", "b1", "p")
	ad := st.admin()

	all, err := ad.Leases("", "")
	if err != nil || len(all) != 4 {
		t.Fatalf("leases: %v %v", all, err)
	}
	gone, _ := ad.Leases("gone", "")
	if len(gone) != 3 || gone[0].Node != "gone" || gone[0].Since.IsZero() {
		t.Fatalf("leases of node gone: %+v", gone)
	}
	// Which of a read's claims a listing shows (a container, a network)
	// is ops.LeaseFilter's, for both stores (TestLeasesAlikeOnBothBackends).
	if ls, _ := ad.Leases("", "p"); len(ls) != 3 || slices.ContainsFunc(ls, func(l ops.Lease) bool { return l.Pool != "p" }) {
		t.Fatalf("pool p: %+v", ls)
	}
	if !slices.ContainsFunc(all, func(l ops.Lease) bool { return l.Address == g3.String() && l.Pool == "" && l.Network == "net-n" }) {
		t.Fatalf("network net-n: %+v", all)
	}

	// release: refused for the wrong owner, for an unclaimed address; a
	// dry run changes nothing.
	p := alloc.Scope{Pool: "p"}
	if _, err := ad.Release(p, alloc.ReleaseRequest{Addr: a1, Container: "someone-else"}, false); err == nil {
		t.Fatal("released for the wrong container")
	}
	if _, err := ad.Release(p, alloc.ReleaseRequest{Addr: netip.MustParseAddr("10.214.31.250")}, false); err == nil {
		t.Fatal("released an unclaimed address")
	}
	if _, err := ad.Release(p, alloc.ReleaseRequest{Addr: a1, Node: "live"}, true); err == nil || !strings.Contains(err.Error(), `held by node "gone", not "live"`) {
		t.Fatalf("released for the wrong node: %v", err)
	}
	if _, err := ad.Release(p, alloc.ReleaseRequest{Addr: a1, Container: "g1", IfName: "eth0", Node: "gone"}, true); err != nil {
		t.Fatal(err)
	}
	if ls, _ := ad.Leases("", ""); len(ls) != 4 {
		t.Fatal("dry run released")
	}
	if rel, err := ad.Release(p, alloc.ReleaseRequest{Addr: a1, Container: "g1", IfName: "eth0"}, false); err != nil || rel.Owner.ContainerID != "g1" {
		t.Fatalf("release: %+v %v", rel, err)
	}
	if ls, _ := ad.Leases("", ""); len(ls) != 3 {
		t.Fatalf("after release: %+v", ls)
	}

	// gc of node gone keeping g2: a plan first, then applied; node alive
	// is never touched.
	plan, err := ad.GC("gone", "", "", alloc.NewKeepSet("", []alloc.Attachment{{ContainerID: "g2", IfName: "eth0"}}), false, false)
	if err != nil || len(plan) != 1 || plan[0].ContainerID != "g3" {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	if ls, _ := ad.Leases("", ""); len(ls) != 3 {
		t.Fatal("a plan released")
	}
	if _, err := ad.GC("gone", "", "", alloc.NewKeepSet("", nil), true, true); err != nil {
		t.Fatal(err)
	}
	left, _ := ad.Leases("", "")
	if len(left) != 1 || left[0].Node != "alive" || left[0].Address != b1.String() {
		t.Fatalf("after gc of node gone: %+v", left)
	}
	// The claims and index keys; exhaustion marks and node records stay,
	// and the live node's fence buckets, but not the gone node's.
	var ks []string
	keys := st.keys("/admin-test/" + t.Name() + "/")
	for _, k := range keys {
		if !strings.Contains(k, "/full/") && !strings.Contains(k, "/nodes/") && !strings.Contains(k, "/fences/alive/") {
			ks = append(ks, k)
		}
	}
	if len(ks) != 2 {
		t.Fatalf("keys left: %v (want b1's claim and index key)", ks)
	}
	if _, err := ad.GC("", "", "", alloc.NewKeepSet("", nil), true, true); err == nil {
		t.Fatal("gc without a node")
	}
}

// gc --etcd --apply over many pools: each scope's batches carry that
// scope's marks only, so a pool with a full batch of leaks beside eight
// other pools with leaks stays within etcd's --max-txn-ops (the in-memory
// etcd refuses a transaction past it, as a default cluster does).
func TestAdminGCManyPools(t *testing.T) {
	const pools, inFirst = 9, MaxTxnOps - 4
	st := newSite(t)
	defs := make([]string, pools)
	for i := range defs {
		defs[i] = fmt.Sprintf(`"p%d":[{"subnet":"10.215.%d.0/24"}]`, i, i)
	}
	run := func(cid string, pool int) {
		conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"many","ipam":{"type":"ipam-da-etcd","dataDir":%q,
			"etcd":{"endpoints":["%s"],"prefix":"/admin-test/%s/","nodeName":"gone"},"poolDefinitions":{%s}},
			"prevResult":{"cniVersion":"1.1.0","pools":[{"name":"p%d"}]}}`,
			t.TempDir(), st.endpoints(), t.Name(), strings.Join(defs, ","), pool)
		var stdout, stderr bytes.Buffer
		env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + cid, "CNI_IFNAME=eth0", "CNI_NETNS=/x", "CNI_PATH=/nonexistent"}
		if code := plugin.Run(daetcd.Personality(), plugin.IO{Environ: env, Stdin: strings.NewReader(conf), Stdout: &stdout, Stderr: &stderr}); code != 0 {
			t.Fatalf("ADD %s: %s %s", cid, stdout.String(), stderr.String())
		}
	}
	for i := range inFirst {
		run(fmt.Sprint("a", i), 0)
	}
	for p := 1; p < pools; p++ {
		run(fmt.Sprint("b", p), p)
	}
	ad := st.admin()
	plan, err := ad.GC("gone", "", "", alloc.NewKeepSet("", nil), true, true)
	if err != nil || len(plan) != inFirst+pools-1 {
		t.Fatalf("gc --apply: %d planned, %v", len(plan), err)
	}
	if left, err := ad.Leases("", ""); err != nil || len(left) != 0 {
		t.Fatalf("after gc --apply: %d leases left, %v", len(left), err)
	}
}
