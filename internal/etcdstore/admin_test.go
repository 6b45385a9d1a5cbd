package etcdstore_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/etcdkv/etcdkvfake"
	. "github.com/cniplugins/cniplugins/internal/etcdstore"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

// cluster is the in-memory etcd (etcdkvfake) every test of the package
// runs against, each under its own prefix: the unit tests need no etcd
// binary. The plugin runs against real clusters in test/etcd, and the
// store contract once more in contract_cluster_test.go.
var cluster memCluster

// memCluster gives the fake the two methods the tests use of a cluster.
type memCluster struct{ *etcdkvfake.Fake }

func (c memCluster) Endpoints() []string { return []string{c.URL()} }

func (c memCluster) Keys(prefix string) ([]string, error) {
	return slices.Sorted(maps.Keys(c.Values(prefix))), nil
}

// cleanups is a TestMain's testing.TB Cleanup: the fake's server stops
// after every test has run.
type cleanups []func()

func (c *cleanups) Cleanup(f func()) { *c = append(*c, f) }

func TestMain(m *testing.M) {
	var done cleanups
	cluster = memCluster{etcdkvfake.New(&done)}
	code := m.Run()
	for _, f := range done {
		f()
	}
	os.Exit(code)
}

// add runs ADD in-process (plugin.Run, exactly what an exec does) for
// container cid on node, in pool mode on pool P or standalone.
func add(t *testing.T, node, cid, scope string) netip.Addr {
	t.Helper()
	out := runIn(t, "ADD", node, cid, scope)
	i := bytes.Index(out, []byte(`"address": "`))
	if i < 0 {
		t.Fatalf("ADD: %s", out)
	}
	rest := out[i+len(`"address": "`):]
	p := netip.MustParsePrefix(string(rest[:bytes.IndexByte(rest, '"')]))
	return p.Addr()
}

func runIn(t *testing.T, cmd, node, cid, scope string) []byte {
	t.Helper()
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"net-%s","ipam":{"type":"ipam-da-etcd","dataDir":%q,
		"etcd":{"endpoints":["%s"],"prefix":"/admin-test/%s/","nodeName":%q},
		"ranges":[[{"subnet":"10.214.30.0/24"}]],"poolDefinitions":{"p":[{"subnet":"10.214.31.0/24"}]}}`,
		scope, t.TempDir(), strings.Join(cluster.Endpoints(), `","`), t.Name(), node)
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

func admin(t *testing.T) *Admin { return adminAt(t, "/admin-test/") }

// adminAt is an Admin for the test's keys under base.
func adminAt(t *testing.T, base string) *Admin {
	a, err := NewAdmin(AdminConfig{Endpoints: cluster.Endpoints(), Prefix: base + t.Name() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAdminLeasesReleaseGC(t *testing.T) {
	a1 := add(t, "gone", "g1", "p")
	add(t, "gone", "g2", "p")
	g3 := add(t, "gone", "g3", "n")
	b1 := add(t, "alive", "b1", "p")
	ad := admin(t)

	all, err := ad.Leases(Filter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("leases: %v %v", all, err)
	}
	gone, _ := ad.Leases(Filter{Node: "gone"})
	if len(gone) != 3 || gone[0].Node != "gone" || gone[0].Since().IsZero() {
		t.Fatalf("leases of node gone: %+v", gone)
	}
	if ls, _ := ad.Leases(Filter{Pool: "p", Container: "g"}); len(ls) != 2 {
		t.Fatalf("pool p, containers g*: %+v", ls)
	}
	if ls, _ := ad.Leases(Filter{Network: "net-n"}); len(ls) != 1 || ls[0].Address != g3.String() || ls[0].ScopeName() != "network net-n" {
		t.Fatalf("network net-n: %+v", ls)
	}

	// release: refused for the wrong owner, for an unclaimed address; a
	// dry run changes nothing.
	p := alloc.Scope{Pool: "p"}
	if _, err := ad.Release(a1, p, "someone-else", "", "", false); err == nil {
		t.Fatal("released for the wrong container")
	}
	if _, err := ad.Release(netip.MustParseAddr("10.214.31.250"), p, "", "", "", false); err == nil {
		t.Fatal("released an unclaimed address")
	}
	if _, err := ad.Release(a1, p, "", "", "live", true); err == nil || !strings.Contains(err.Error(), `held by node "gone", not "live"`) {
		t.Fatalf("released for the wrong node: %v", err)
	}
	if _, err := ad.Release(a1, p, "g1", "eth0", "gone", true); err != nil {
		t.Fatal(err)
	}
	if ls, _ := ad.Leases(Filter{}); len(ls) != 4 {
		t.Fatal("dry run released")
	}
	if l, err := ad.Release(a1, p, "g1", "eth0", "", false); err != nil || l.ContainerID != "g1" {
		t.Fatalf("release: %+v %v", l, err)
	}
	if ls, _ := ad.Leases(Filter{}); len(ls) != 3 {
		t.Fatalf("after release: %+v", ls)
	}

	// gc of node gone keeping g2: a plan first, then applied; node alive
	// is never touched.
	plan, err := ad.GC("gone", Filter{}, []alloc.Attachment{{ContainerID: "g2", IfName: "eth0"}}, false)
	if err != nil || len(plan) != 1 || plan[0].ContainerID != "g3" {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	if ls, _ := ad.Leases(Filter{}); len(ls) != 3 {
		t.Fatal("a plan released")
	}
	if _, err := ad.GC("gone", Filter{}, nil, true); err != nil {
		t.Fatal(err)
	}
	left, _ := ad.Leases(Filter{})
	if len(left) != 1 || left[0].Node != "alive" || left[0].Address != b1.String() {
		t.Fatalf("after gc of node gone: %+v", left)
	}
	// The claims and index keys; exhaustion marks and node records stay,
	// and the live node's fence buckets, but not the gone node's.
	var ks []string
	keys, _ := cluster.Keys("/admin-test/" + t.Name() + "/")
	for _, k := range keys {
		if !strings.Contains(k, "/full/") && !strings.Contains(k, "/nodes/") && !strings.Contains(k, "/fences/alive/") {
			ks = append(ks, k)
		}
	}
	if len(ks) != 2 {
		t.Fatalf("keys left: %v (want b1's claim and index key)", ks)
	}
	if _, err := ad.GC("", Filter{}, nil, true); err == nil {
		t.Fatal("gc without a node")
	}
}

// gc --etcd --apply over many pools: each scope's batches carry that
// scope's marks only, so a pool with a full batch of leaks beside eight
// other pools with leaks stays within etcd's --max-txn-ops (the in-memory
// etcd refuses a transaction past it, as a default cluster does).
func TestAdminGCManyPools(t *testing.T) {
	const pools, inFirst = 9, MaxTxnOps - 4
	defs := make([]string, pools)
	for i := range defs {
		defs[i] = fmt.Sprintf(`"p%d":[{"subnet":"10.215.%d.0/24"}]`, i, i)
	}
	run := func(cid string, pool int) {
		conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"many","ipam":{"type":"ipam-da-etcd","dataDir":%q,
			"etcd":{"endpoints":["%s"],"prefix":"/admin-test/%s/","nodeName":"gone"},"poolDefinitions":{%s}},
			"prevResult":{"cniVersion":"1.1.0","pools":[{"name":"p%d"}]}}`,
			t.TempDir(), strings.Join(cluster.Endpoints(), `","`), t.Name(), strings.Join(defs, ","), pool)
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
	ad := admin(t)
	plan, err := ad.GC("gone", Filter{}, nil, true)
	if err != nil || len(plan) != inFirst+pools-1 {
		t.Fatalf("gc --apply: %d planned, %v", len(plan), err)
	}
	if left, err := ad.Leases(Filter{}); err != nil || len(left) != 0 {
		t.Fatalf("after gc --apply: %d leases left, %v", len(left), err)
	}
}
