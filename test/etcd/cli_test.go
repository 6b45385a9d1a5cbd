package etcd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// cli runs `cniplugins ARGS... --etcd ENDPOINTS --prefix P` with the
// test's cluster and prefix: the full flavour installed under the
// binary's name, the local commands with etcd as their backend.
func cli(t *testing.T, args ...string) testbin.Reply {
	return cliThrough(t, cluster.Endpoints(), args...)
}

// cliThrough is cli against the endpoints eps.
func cliThrough(t *testing.T, eps []string, args ...string) testbin.Reply {
	argv := append(args, "--etcd", strings.Join(eps, ","), "--prefix", prefix(t))
	return testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: argv})
}

// leaseOut is the leases JSON schema, the local one plus node.
type leaseOut struct {
	Address, Pool, Network, Node, ContainerID, IfName, Owner, Since, NodeSeen, Problem, Tenant string
}

func cliLeases(t *testing.T, args ...string) []leaseOut {
	t.Helper()
	r := cli(t, append([]string{"leases", "-o", "json"}, args...)...)
	if r.Exit != 0 {
		t.Fatalf("leases: %s %s", r.Stdout, r.Stderr)
	}
	var ls []leaseOut
	if err := json.Unmarshal(r.Stdout, &ls); err != nil {
		t.Fatalf("leases JSON %s: %v", r.Stdout, err)
	}
	return ls
}

// TestCLIForAGoneNode: host-a is gone for good. An operator lists its
// claims, collects them keeping one container, and releases the last by
// hand; host-b's claims are never touched until released explicitly.
func TestCLIForAGoneNode(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	confA := poolConf(t, a, sharedPool("10.214.22.0/24"), nil)
	confB := poolConf(t, b, sharedPool("10.214.22.0/24"), nil)
	for _, cid := range []string{"a1", "a2", "a3"} {
		mustAdd(t, cid, confA)
	}
	_, bAddr := mustAdd(t, "b1", confB)

	if ls := cliLeases(t); len(ls) != 4 {
		t.Fatalf("all leases: %+v", ls)
	}
	gone := cliLeases(t, "--node", "host-a")
	if len(gone) != 3 || gone[0].Node != "host-a" || gone[0].Pool != "shared" || gone[0].Network != "etcd-net" || gone[0].Owner != "cni" ||
		!strings.HasPrefix(gone[0].Since, "20") || gone[0].Problem != "" || !strings.HasPrefix(gone[0].NodeSeen, "20") {
		t.Fatalf("host-a's leases: %+v", gone)
	}
	t.Logf("leases:\n%s", cli(t, "leases").Stdout)
	table := cli(t, "leases", "--node", "host-b")
	header := strings.Fields(strings.SplitN(string(table.Stdout), "\n", 2)[0])
	if table.Exit != 0 || strings.Join(header, " ") != "ADDRESS NETWORK POOL CONTAINER IFNAME OWNER SINCE NODE NODE-SEEN" ||
		!strings.Contains(string(table.Stdout), bAddr[0].String()) || strings.Contains(string(table.Stdout), "host-a") {
		t.Fatalf("table: %s %s", table.Stdout, table.Stderr)
	}
	if r := cli(t, "leases", "--node", "host/a"); r.Exit != 1 || len(r.Stdout) != 0 {
		t.Fatalf("leases --node host/a: exit %d %s", r.Exit, r.Stdout)
	}

	plan := cli(t, "gc", "--node", "host-a", "--keep", "a2@eth0")
	if plan.Exit != 0 || strings.Count(string(plan.Stdout), "would release") != 2 {
		t.Fatalf("gc plan: %s %s", plan.Stdout, plan.Stderr)
	}
	if ls := cliLeases(t, "--node", "host-a"); len(ls) != 3 {
		t.Fatal("the plan released something")
	}
	// host-a ran its ADDs a moment ago: it is not gone, whatever the
	// operator believes, until --dead-after has passed or --force says so.
	if r := cli(t, "gc", "--node", "host-a", "--keep", "a2", "--apply"); r.Exit != 1 || !strings.Contains(string(r.Stderr), "seen alive") ||
		!strings.Contains(string(r.Stderr), "--dead-after 24h0m0s") || len(cliLeases(t, "--node", "host-a")) != 3 {
		t.Fatalf("gc --apply of a node seen alive: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := cli(t, "gc", "--node", "host-a", "--keep", "a2", "--apply", "--force"); r.Exit != 0 || strings.Count(string(r.Stdout), "released") != 2 ||
		!strings.Contains(string(r.Stderr), "--force: not checking") {
		t.Fatalf("gc --apply: %s %s", r.Stdout, r.Stderr)
	} else {
		t.Logf("gc --apply:\n%s", r.Stdout)
	}
	left := cliLeases(t, "--node", "host-a")
	if len(left) != 1 || left[0].ContainerID != "a2" {
		t.Fatalf("after gc: %+v", left)
	}
	for _, bad := range [][]string{{"release", left[0].Address, "--pool", "../escape"}, {"gc", "--node", "host-a", "--network", "etcd net"}} {
		if r := cli(t, bad...); r.Exit != 1 || !strings.Contains(string(r.Stderr), "invalid --") {
			t.Fatalf("%v: exit %d %s %s", bad, r.Exit, r.Stdout, r.Stderr)
		}
	}
	if r := cli(t, "release", left[0].Address, "--pool", "shared", "--container", "a1"); r.Exit == 0 {
		t.Fatalf("released for the wrong container: %s", r.Stdout)
	}
	if r := cli(t, "release", left[0].Address, "--pool", "shared", "--node", "host-b"); r.Exit != 1 || !strings.Contains(string(r.Stderr), `held by node "host-a"`) {
		t.Fatalf("released for the wrong node: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := cli(t, "release", left[0].Address, "--pool", "shared", "--node", "host-a", "--container", "a2", "--dry-run"); r.Exit != 0 ||
		string(r.Stdout) != "would release "+left[0].Address+" (pool shared, network etcd-net, node host-a, container a2 ifname eth0, owner cni)\n" {
		t.Fatalf("release --dry-run: %s %s", r.Stdout, r.Stderr)
	}
	if r := cli(t, "release", left[0].Address, "--pool", "shared", "--node", "host-a", "--container", "a2"); r.Exit != 0 ||
		!strings.HasPrefix(string(r.Stdout), "released "+left[0].Address+" (pool shared") {
		t.Fatalf("release: %s %s", r.Stdout, r.Stderr)
	}
	if r := cli(t, "release", left[0].Address, "--pool", "shared"); r.Exit != 1 || !strings.Contains(string(r.Stderr), "is not reserved in pool/shared") {
		t.Fatalf("second release: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	if ls := cliLeases(t); len(ls) != 1 || ls[0].Node != "host-b" {
		t.Fatalf("host-b's claim must remain: %+v", ls)
	}
	// An empty keep list is allowed with --etcd (the node is gone): the
	// plan is every claim of that node, and it changes nothing.
	if r := cli(t, "gc", "--node", "host-b", "--pool", "shared"); r.Exit != 0 || string(r.Stdout) != "would release "+bAddr[0].String()+" (pool shared, network etcd-net, node host-b, container b1 ifname eth0, owner cni)\n" {
		t.Fatalf("gc plan for host-b: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	mustRun(t, "DEL", "b1", confB)
	wantNoKeys(t)
}
