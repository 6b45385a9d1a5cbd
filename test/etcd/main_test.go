// Package etcd execs the full flavour's ipam-da-etcd, as a runtime does,
// against a real 3-member etcd cluster on 127.0.0.1 (Debian's etcd-server)
// that TestMain starts and removes, also on failure.
package etcd

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// execMargin is what a bound on a command's duration allows beyond the
// timeout it configures: an exec's start-up and scheduling on a loaded
// two-core machine. Such bounds tell "gave up at its timeout" from
// "hung"; speed is measured by make bench, never here.
const execMargin = 10 * time.Second

var (
	binDir  string
	runID   string // this run's, in every prefix (prefix)
	cluster *etcdtest.Cluster
	missing error // why no etcd cluster can run here
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	root, err := os.MkdirTemp("", "cniplugins-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	runID = filepath.Base(root)
	bin, err := testkit.Build(root, "full")
	if err == nil {
		binDir = filepath.Join(root, "cni-bin")
		err = testkit.Install(bin, binDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := etcdtest.Available(); err != nil {
		missing = err
		fmt.Fprintln(os.Stderr, "no etcd here:", missing)
		return m.Run()
	}
	cluster, err = etcdtest.Start(etcdtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cluster.Stop()
	return m.Run()
}

func needCluster(t *testing.T) {
	t.Helper()
	testkit.NeedComponent(t, missing)
	// A test that killed members leaves them restarted; wait for quorum
	// so that every test starts from a healthy cluster.
	for _, m := range cluster.Members {
		if !m.Running() {
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cluster.WaitReady(30e9); err != nil {
		t.Fatal(err)
	}
}

// host is a simulated host: its node name and its own local directory.
type host struct {
	node string
	dir  string
}

func newHost(t *testing.T, node string) host {
	return host{node: node, dir: t.TempDir()}
}

// etcdKeys is ipam.etcd for the test: its own prefix, so tests never see
// each other's keys.
func etcdKeys(t *testing.T, h host, extra map[string]any) map[string]any {
	e := map[string]any{"endpoints": cluster.Endpoints(), "prefix": prefix(t), "nodeName": h.node}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// prefix is t's own, and this run's: what a host remembers between execs
// (its fence buckets' revisions, under /run) is keyed by prefix and node
// name, and a run must not meet an earlier run's memory of another
// cluster (a node that "never ran a command" would have, and its first
// claim would cost a round trip more).
func prefix(t *testing.T) string { return "/cniplugins-test/" + runID + "/" + t.Name() + "/" }

// standalone is a host-local-style config for ipam-da-etcd.
func standalone(t *testing.T, h host, ranges any, extra map[string]any) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "ranges": ranges, "dataDir": h.dir, "etcd": etcdKeys(t, h, extra)}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "etcd-net", "ipam": ipam})
}

// poolConf is a config in pool mode: prevResult.pools as a selector sends it.
func poolConf(t *testing.T, h host, pools []map[string]any, extra map[string]any) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "dataDir": h.dir, "etcd": etcdKeys(t, h, extra)}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "etcd-net", "ipam": ipam,
		"prevResult": map[string]any{"cniVersion": "1.1.0", "pools": pools}})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withPrev returns conf with prevResult set to res (for DEL and CHECK).
func withPrev(t *testing.T, conf []byte, res []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatal(err)
	}
	var prev map[string]any
	if err := json.Unmarshal(res, &prev); err != nil {
		t.Fatal(err)
	}
	if old, ok := m["prevResult"].(map[string]any); ok && old["pools"] != nil {
		prev["pools"] = old["pools"]
	}
	m["prevResult"] = prev
	return mustJSON(t, m)
}

func call(plugin, cmd, cid string, conf []byte, args string) testbin.Reply {
	return testbin.Run(testbin.Call{Plugin: plugin, Command: cmd, ContainerID: cid, IfName: "eth0",
		Netns: "/var/run/netns/none", Args: args, Path: binDir, Stdin: conf})
}

func run1(cmd, cid string, conf []byte) testbin.Reply {
	return call("ipam-da-etcd", cmd, cid, conf, "")
}

func mustAdd(t *testing.T, cid string, conf []byte) (testbin.Reply, []netip.Addr) {
	t.Helper()
	r := run1("ADD", cid, conf)
	if r.Exit != 0 {
		t.Fatalf("ADD %s: exit %d\nstdout: %s\nstderr: %s", cid, r.Exit, r.Stdout, r.Stderr)
	}
	return r, addrsOf(t, r.Stdout)
}

func mustRun(t *testing.T, cmd, cid string, conf []byte) testbin.Reply {
	t.Helper()
	r := run1(cmd, cid, conf)
	if r.Exit != 0 {
		t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", cmd, cid, r.Exit, r.Stdout, r.Stderr)
	}
	return r
}

func addrsOf(t *testing.T, out []byte) []netip.Addr {
	t.Helper()
	var res current.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	var as []netip.Addr
	for _, ip := range res.IPs {
		a, _ := netip.AddrFromSlice(ip.Address.IP)
		as = append(as, a.Unmap())
	}
	return as
}

// wantCode asserts a failed call printed exactly one CNI error with code.
func wantCode(t *testing.T, r testbin.Reply, code uint) *types.Error {
	t.Helper()
	if r.Exit == 0 {
		t.Fatalf("succeeded, want code %d: %s", code, r.Stdout)
	}
	e := oneError(t, r)
	if e.Code != code {
		t.Fatalf("code %d (%s: %s), want %d\nstderr: %s", e.Code, e.Msg, e.Details, code, r.Stderr)
	}
	return e
}

// oneError decodes stdout as exactly one CNI error object.
func oneError(t *testing.T, r testbin.Reply) *types.Error {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(r.Stdout)))
	var e types.Error
	if err := dec.Decode(&e); err != nil || e.Code == 0 || e.Msg == "" {
		t.Fatalf("stdout is not one CNI error: %q (%v)", r.Stdout, err)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value: %q", r.Stdout)
	}
	return &e
}

// keys lists the test's keys in etcd that hold state: claims, index keys
// and exhaustion marks that say full. Node records, marks left empty by a
// release (it writes them empty, not deletes them) and the fences a
// release leaves in index keys (etcd deletes them with their lease) hold
// none.
func keys(t *testing.T) []string {
	t.Helper()
	return stateKeys(t, cluster)
}

// stateKeys is keys for the test's keys in cluster c.
func stateKeys(t *testing.T, c *etcdtest.Cluster) []string {
	t.Helper()
	kvs, err := c.Values(prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		if rel := strings.TrimPrefix(k, prefix(t)); strings.HasPrefix(rel, "nodes/") || (strings.HasPrefix(rel, "full/") && kvs[k] == "") || isFenceBucket(rel, kvs[k]) {
			continue
		}
		ks = append(ks, k)
	}
	return ks
}

// isFenceBucket reports one of a node's fence buckets (keys holding the
// nonce of their last write, which releases write and claims compare),
// the state a node keeps whatever the churn.
func isFenceBucket(rel, value string) bool {
	_, err := strconv.ParseUint(value, 16, 64)
	return strings.HasPrefix(rel, "fences/") && len(value) == 16 && err == nil
}

func wantNoKeys(t *testing.T) {
	t.Helper()
	if ks := keys(t); len(ks) > 0 {
		t.Fatalf("%d keys left under %s: %v", len(ks), prefix(t), ks)
	}
}

// parallel runs f(i) for i in [0,n) concurrently and waits.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); f(i) }()
	}
	wg.Wait()
}

// leaderIndex is the index in cluster.Members of the member leading now.
func leaderIndex(t *testing.T) int {
	t.Helper()
	leader, err := cluster.Leader()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Index(cluster.Members, leader)
}

// pause SIGSTOPs member i; it is resumed when the test ends, before
// proxies made earlier close (a SIGCONT more is harmless).
func pause(t *testing.T, i int) *etcdtest.Member {
	t.Helper()
	m := cluster.Members[i]
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume() })
	return m
}
