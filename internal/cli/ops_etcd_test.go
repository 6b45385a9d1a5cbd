package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/version"
)

// recorder is a shared Backend that records what the commands asked of it and
// answers with fixed leases: the wiring under test is the commands', the
// etcd backend itself is exercised against a real cluster in test/etcd.
type recorder struct {
	conf    clusteraccess.Access
	filter  ops.LeaseFilter
	release ops.ReleaseRequest
	gc      ops.GCRequest
	leases  []ops.Lease
	scopes  []ops.StateScope
	states  map[string]alloc.ScopeState // by Dir
}

func (r *recorder) Leases(f ops.LeaseFilter) ([]ops.Lease, error) { r.filter = f; return r.leases, nil }

// Release answers that the engine frees the first lease.
func (r *recorder) Release(q ops.ReleaseRequest) (alloc.ReleasePlan, error) {
	r.release = q
	l := r.leases[0]
	owner := alloc.Attachment{ContainerID: l.ContainerID, IfName: l.IfName, Network: l.Network}
	return alloc.ReleasePlan{Owner: owner, Node: l.Node, Del: alloc.DelPlan{Step: alloc.DelFree}}, nil
}
func (r *recorder) GC(q ops.GCRequest) ([]ops.Lease, error) { r.gc = q; return r.leases, nil }
func (r *recorder) Shared() bool                            { return true }
func (r *recorder) States(ss []ops.StateScope) ([]alloc.ScopeState, error) {
	r.scopes = ss
	out := make([]alloc.ScopeState, len(ss))
	for i, s := range ss {
		out[i] = r.states[s.Dir]
		out[i].Place = s.Dir
	}
	return out, nil
}

func TestEtcdFlagsReachTheBackend(t *testing.T) {
	since := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	rec := &recorder{leases: []ops.Lease{
		{Address: "10.1.0.7", Network: "blue", Pool: "p1", ContainerID: "c1", IfName: "eth0", Owner: "cni", Since: since, Node: "host-a"},
		{Network: "blue", Pool: "p1", ContainerID: "c2", IfName: "eth0", Owner: ops.OwnerMarker, Since: since, Node: "host-a"},
	}}
	f := Lean(version.FlavourFull)
	f.Etcd = func(c clusteraccess.Access) (ops.Backend, error) { rec.conf = c; return rec, nil }
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		exit := Main(append([]string{"cniplugins-full"}, args...), plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f)
		return exit, stdout.String(), stderr.String()
	}

	exit, out, errs := run("leases", "--etcd", "http://a:2379,https://b:2379", "--prefix", "/x/", "--node", "host-a",
		"--pool", "p1", "--cacert", "ca", "--cert", "crt", "--key", "k", "--user", "u", "--password-file", "pw", "--timeout", "2s")
	want := clusteraccess.Access{Endpoints: []string{"http://a:2379", "https://b:2379"}, Prefix: "/x/", Timeout: 2 * time.Second,
		CAFile: "ca", CertFile: "crt", KeyFile: "k", Username: "u", PasswordFile: "pw"}
	if exit != 0 || fmt.Sprint(rec.conf) != fmt.Sprint(want) || rec.filter != (ops.LeaseFilter{Pool: "p1", Node: "host-a"}) {
		t.Fatalf("leases: exit %d %s; conf %+v filter %+v", exit, errs, rec.conf, rec.filter)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ADDRESS NETWORK POOL CONTAINER IFNAME OWNER SINCE NODE NODE-SEEN" ||
		strings.Join(strings.Fields(lines[2]), " ") != "- blue p1 c2 eth0 marker 2026-11-23T06:00:00Z host-a -" {
		t.Errorf("leases table:\n%s", out)
	}

	_, out, _ = run("leases", "--etcd", "http://a:2379", "-o", "json")
	var js []map[string]any
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js) != 2 || js[0]["node"] != "host-a" || js[0]["address"] != "10.1.0.7" || js[1]["owner"] != "marker" {
		t.Errorf("leases JSON: %v %s", err, out)
	}

	exit, out, _ = run("release", "10.1.0.7", "--pool", "p1", "--etcd", "http://a:2379", "--node", "host-a", "--container", "c1", "--dry-run")
	if exit != 0 || rec.release.Addr != netip.MustParseAddr("10.1.0.7") || rec.release.Node != "host-a" || rec.release.Container != "c1" || !rec.release.DryRun ||
		out != "would release 10.1.0.7 (pool p1, network blue, node host-a, container c1 ifname eth0, owner cni)\n" {
		t.Errorf("release: exit %d %q %+v", exit, out, rec.release)
	}

	// gc --etcd: --node required, the keep list may be empty (the node is gone).
	if exit, _, errs := run("gc", "--etcd", "http://a:2379", "--keep", "c1"); exit != 1 || !strings.Contains(errs, "--node") {
		t.Errorf("gc --etcd without --node: exit %d %s", exit, errs)
	}
	exit, out, errs = run("gc", "--etcd", "http://a:2379", "--node", "host-a")
	if exit != 0 || rec.gc.Node != "host-a" || rec.gc.Apply || len(rec.gc.Keep) != 0 || strings.Count(out, "would release") != 2 ||
		!strings.Contains(out, "would release (no address) (pool p1, network blue, node host-a, container c2 ifname eth0, owner marker)") ||
		!strings.Contains(errs, "2 to release; nothing changed") {
		t.Errorf("gc plan: exit %d %q %q %+v", exit, out, errs, rec.gc)
	}

	// The other backend's flags are refused, not ignored.
	for _, args := range [][]string{
		{"leases", "--etcd", "http://a:2379", "--data-dir", "/tmp"},
		{"gc", "--etcd", "http://a:2379", "--node", "n", "--lock-timeout", "1s"},
		{"leases", "--prefix", "/x/"},
	} {
		if exit, _, errs := run(args...); exit != 1 || !strings.Contains(errs, "--etcd") {
			t.Errorf("%v: exit %d %s", args, exit, errs)
		}
	}
}

// writeConflist writes a conflist of network name, a bridge with ipam,
// as file in dir.
func writeConflist(t *testing.T, dir, file, name, ipam string) {
	t.Helper()
	body := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"bridge","ipam":%s}]}`, name, ipam)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pools --etcd lists the ipam-da-etcd networks under --prefix, from the
// backend's states of the scopes ops placed, and says which networks it
// leaves out; the data dir's networks and flags are not its.
func TestPoolsEtcd(t *testing.T) {
	dir := t.TempDir()
	conflist := func(file, name, ipam string) { writeConflist(t, dir, file, name, ipam) }
	conflist("10-local.conflist", "local", `{"type":"ipam-da-pools","dataDir":"`+dir+`","ranges":[[{"subnet":"10.9.9.0/29"}]]}`)
	conflist("20-etcd.conflist", "shared-net", `{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-etcd"],"etcd":{"endpoints":["http://a:2379"]},
		"rules":[{"namespace":"a","pools":[{"name":"p","subnet":"10.9.0.0/29"}]}]}`)
	conflist("30-other.conflist", "other-net", `{"type":"ipam-da-etcd","etcd":{"endpoints":["http://a:2379"],"prefix":"/other"},"ranges":[[{"subnet":"10.9.1.0/29"}]]}`)
	rec := &recorder{states: map[string]alloc.ScopeState{"/cniplugins/ip/pool/p/": {Addrs: []netip.Addr{netip.MustParseAddr("10.9.0.2")}, Full: []int{0}}}}
	f := Lean(version.FlavourFull)
	f.Etcd = func(c clusteraccess.Access) (ops.Backend, error) { rec.conf = c; return rec, nil }
	run := func(f Flavour, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		exit := Main(append([]string{"cniplugins-full"}, args...), plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f)
		return exit, stdout.String(), stderr.String()
	}
	exit, out, errs := run(f, "pools", "--etcd", "http://a:2379", "--conf-dir", dir, "-o", "json")
	var us []ops.Usage
	if exit != 0 || json.Unmarshal([]byte(out), &us) != nil {
		t.Fatalf("pools --etcd: exit %d %s %s", exit, out, errs)
	}
	if fmt.Sprint(rec.scopes) != "[{/cniplugins/ip/pool/p/ {p }}]" || len(us) != 1 || us[0].Name != "p" || us[0].Used != 1 || !us[0].Exhausted ||
		us[0].Dir != "/cniplugins/ip/pool/p/" || strings.Join(us[0].Networks, ",") != "shared-net" {
		t.Errorf("pools --etcd read %v, listed %+v", rec.scopes, us)
	}
	if !strings.Contains(errs, "network other-net keeps its keys under /other/, not /cniplugins/: not listed") {
		t.Errorf("stderr does not say other-net is left out: %q", errs)
	}
	for _, tt := range []struct {
		f    Flavour
		args []string
		err  string
	}{
		{f, []string{"pools", "--etcd", "http://a:2379", "--data-dir", dir}, "--data-dir is for the local state"},
		{f, []string{"pools", "--etcd", "http://a:2379", "--node", "n"}, "unknown flag: --node"},
		{f, []string{"pools", "--prefix", "/x/"}, "--prefix needs --etcd"},
		{Lean(version.FlavourLean), []string{"pools", "--etcd", "http://a:2379"}, "--etcd needs the full flavour"},
	} {
		if exit, _, errs := run(tt.f, tt.args...); exit != 1 || !strings.Contains(errs, tt.err) {
			t.Errorf("%v: exit %d %s, want %q", tt.args, exit, errs, tt.err)
		}
	}
}

// pools --etcd shows each tenant the quota its ADDs carry, as local state
// does (ops.Usage is one for both): the smallest max among the rules that
// bind the tenant, whichever pool its addresses are in. team-a's pods
// annotated into gold (max 3) are bound by std's max 2 too, so 2 in both
// pools, in the table's JSON and in cniplugins_tenant_quota.
func TestPoolsEtcdTenantQuota(t *testing.T) {
	dir := t.TempDir()
	body := `{"cniVersion":"1.0.0","name":"tenants","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-etcd"],
		"etcd":{"endpoints":["http://a:2379"]},"namespaceFrom":"kubernetes",
		"rules":[{"namespace":"team-*","annotations":{"tier":"gold"},"pools":["gold"],"quota":{"per":"namespace","max":3}},
			{"namespace":"team-*","pools":["std"],"quota":{"per":"namespace","max":2}},
			{"namespace":"solo","pools":["gold"],"quota":{"per":"namespace","max":4}}],
		"poolDefinitions":{"gold":[{"subnet":"10.9.2.0/29"}],"std":[{"subnet":"10.9.3.0/29"}]}}}]}`
	if err := os.WriteFile(filepath.Join(dir, "10-tenants.conflist"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr
	rec := &recorder{states: map[string]alloc.ScopeState{
		"/cniplugins/ip/pool/gold/": {Addrs: []netip.Addr{ip("10.9.2.1"), ip("10.9.2.2")},
			Tenants: map[netip.Addr]string{ip("10.9.2.1"): "namespace=team-a", ip("10.9.2.2"): "namespace=solo"}},
		"/cniplugins/ip/pool/std/": {Addrs: []netip.Addr{ip("10.9.3.1")}, Tenants: map[netip.Addr]string{ip("10.9.3.1"): "namespace=team-a"}},
	}}
	f := Lean(version.FlavourFull)
	f.Etcd = func(c clusteraccess.Access) (ops.Backend, error) { return rec, nil }
	pools := func(format string) string {
		var stdout, stderr bytes.Buffer
		if exit := Main([]string{"cniplugins-full", "pools", "--etcd", "http://a:2379", "--conf-dir", dir, "-o", format},
			plugin.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}, f); exit != 0 {
			t.Fatalf("pools -o %s: exit %d %s", format, exit, stderr.String())
		}
		return stdout.String()
	}
	var us []ops.Usage
	if err := json.Unmarshal([]byte(pools("json")), &us); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range us {
		for _, tu := range u.Tenants {
			q := -1
			if tu.Quota != nil {
				q = *tu.Quota
			}
			got = append(got, fmt.Sprintf("%s %s %d/%d", u.Name, tu.Tenant, tu.InUse, q))
		}
	}
	if want := "gold namespace=solo 1/4,gold namespace=team-a 1/2,std namespace=team-a 1/2"; strings.Join(got, ",") != want {
		t.Errorf("pools --etcd tenants %q, want %q", strings.Join(got, ","), want)
	}
	prom := pools("prom")
	for _, line := range []string{`cniplugins_tenant_quota{tenant="namespace=team-a",pool="gold"} 2`, `cniplugins_tenant_quota{tenant="namespace=team-a",pool="std"} 2`,
		`cniplugins_tenant_quota{tenant="namespace=solo",pool="gold"} 4`} {
		if !strings.Contains(prom, line+"\n") {
			t.Errorf("pools -o prom lacks %s:\n%s", line, prom)
		}
	}
}
