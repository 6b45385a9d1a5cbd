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

// quotaConf is a chain whose rules give tenants quotas: namespaces
// team-* (sticky, 3 each, their pool overflowing into shared), values of
// CNI_ARGS TEAM (2 each), of the annotation team (2 each), and namespace
// ops by TEAM (5).
func quotaConf(dataDir string, teamMax int) []byte {
	return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"quota","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,"namespaceFrom":"kubernetes",
		"rules":[
			{"namespace":"team-*","pools":[{"name":"t","subnet":"10.234.1.0/29","rangeStart":"10.234.1.2","rangeEnd":"10.234.1.3","overflow":"shared"}],"sticky":true,"quota":{"per":"namespace","max":%d}},
			{"namespace":"ops","pools":["shared"],"quota":{"per":"arg:TEAM","max":5}},
			{"args":{"TEAM":"*"},"pools":["shared"],"quota":{"per":"arg:TEAM","max":2}},
			{"annotations":{"team":"*"},"pools":["shared"],"quota":{"per":"annotation:team","max":2}}],
		"defaultPools":[{"name":"shared","subnet":"10.234.9.0/24"}]},
		"capabilities":{"io.kubernetes.cri.pod-annotations":true}}`, dataDir, teamMax)
}

func TestQuotas(t *testing.T) {
	dataDir := t.TempDir()
	conf := quotaConf(dataDir, 3)
	run := func(cmd, id, args, team string) testbin.Reply {
		c := call("ipam-delegated", cmd, id, conf)
		c.Args = "IgnoreUnknown=1"
		if args != "" {
			c.Args += ";" + args
		}
		if team != "" {
			c.Stdin = []byte(strings.Replace(string(conf), `"capabilities"`, `"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"team":"`+team+`"}},"capabilities"`, 1))
		}
		return testbin.Run(c)
	}
	pod := func(ns, name string) string { return "K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + name }
	ok := func(r testbin.Reply, what string) string {
		t.Helper()
		if r.Exit != 0 {
			t.Fatalf("%s: %s %s", what, r.Stdout, r.Stderr)
		}
		if len(r.Stdout) == 0 { // DEL
			return ""
		}
		return parseResult(t, r.Stdout).IPs[0].Address
	}
	exceeded := func(r testbin.Reply, what, details string) {
		t.Helper()
		if e := r.Err(); e == nil || e.Code != 106 || !strings.HasSuffix(e.Msg, "tenant quota exceeded") || !strings.Contains(e.Details, details) {
			t.Errorf("%s: %+v, want 106 with %q", what, e, details)
		}
	}
	files := func() int {
		n := 0
		for _, p := range []string{"t", "shared"} {
			ents, _ := os.ReadDir(filepath.Join(dataDir, "_pools", p))
			for _, e := range ents {
				if !strings.HasPrefix(e.Name(), "_") && !strings.HasPrefix(e.Name(), "l") {
					n++
				}
			}
		}
		return n
	}

	// Per namespace, overflow included, sticky holds counted.
	var addrs []string
	for i := range 3 {
		addrs = append(addrs, ok(run("ADD", fmt.Sprint("a", i), pod("team-a", fmt.Sprint("p", i)), ""), "team-a pod"))
	}
	if !strings.HasPrefix(addrs[2], "10.234.9.") {
		t.Errorf("team-a's third pod got %s, want the shared pool (t has two addresses)", addrs[2])
	}
	before := files()
	exceeded(run("ADD", "a3", pod("team-a", "p3"), ""), "team-a's fourth pod",
		"tenant=namespace=team-a rule=ipam.rules[0] max=3 inUse=3")
	if files() != before {
		t.Errorf("a refused ADD reserved something: %d files, then %d", before, files())
	}
	ok(run("ADD", "b0", pod("team-b", "p0"), ""), "team-b is another tenant")
	ok(run("DEL", "a0", pod("team-a", "p0"), ""), "DEL of team-a/p0")
	exceeded(run("ADD", "a4", pod("team-a", "p4"), ""), "a new team-a pod while p0's address is held", "inUse=3")
	if got := ok(run("ADD", "a0-again", pod("team-a", "p0"), ""), "team-a/p0 re-created"); got != addrs[0] {
		t.Errorf("team-a/p0 re-created got %s, want its held %s", got, addrs[0])
	}
	ok(run("DEL", "a0-again", pod("team-a", "p0"), ""), "DEL of team-a/p0 again")
	if r := cliRun("release", "--sticky-key", "team-a/p0", "--pool", "t", "--data-dir", dataDir); r.Exit != 0 {
		t.Fatalf("release: %s %s", r.Stdout, r.Stderr)
	}
	ok(run("ADD", "a5", pod("team-a", "p5"), ""), "team-a below its quota again")

	// Lowering the quota frees nothing and refuses new addresses.
	conf = quotaConf(dataDir, 1)
	exceeded(run("ADD", "a6", pod("team-a", "p6"), ""), "team-a under a lowered quota", "max=1 inUse=3")
	for _, id := range []string{"a1", "a2", "a5"} {
		if r := run("CHECK", id, pod("team-a", "p"+id[1:]), ""); r.Exit != 0 {
			t.Errorf("CHECK %s after lowering the quota: %s", id, r.Stdout)
		}
	}
	conf = quotaConf(dataDir, 3)

	// Per arg and per annotation.
	for i := range 2 {
		ok(run("ADD", fmt.Sprint("x", i), "TEAM=x", ""), "TEAM=x")
		ok(run("ADD", fmt.Sprint("y", i), "", "y"), "annotation team=y")
	}
	exceeded(run("ADD", "x2", "TEAM=x", ""), "TEAM=x's third", "tenant=arg:TEAM=x rule=ipam.rules[2] max=2 inUse=2")
	exceeded(run("ADD", "y2", "", "y"), "team=y's third", "tenant=annotation:team=y rule=ipam.rules[3] max=2 inUse=2")
	ok(run("ADD", "z0", "TEAM=z", ""), "TEAM=z is another tenant")
	ok(run("DEL", "x0", "TEAM=x", ""), "DEL of a TEAM=x attachment")
	ok(run("ADD", "x3", "TEAM=x", ""), "TEAM=x below its quota")

	// A rule whose quota's value the attachment does not present: 7.
	if e := run("ADD", "o0", pod("ops", "o0"), "").Err(); e == nil || e.Code != 7 || !strings.Contains(e.Details, "ipam.rules[1]") {
		t.Errorf("ops pod without TEAM: %+v, want 7 naming ipam.rules[1]", e)
	}
	ok(run("ADD", "o1", pod("ops", "o1")+";TEAM=x", ""), "ops pod of TEAM x: rule 1's own tenant count")

	// fsck finds the records consistent; GC of everything leaves none.
	if r := cliRun("fsck", "--data-dir", dataDir); r.Exit != 0 {
		t.Errorf("fsck: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	// A record a killed ADD left (written, its reservation not): fsck
	// names it, --repair removes it.
	tenants := filepath.Join(dataDir, "_pools", "shared", "_tenants")
	stale := filepath.Join(tenants, "_addr", "10.234.9.200")
	if err := os.Link(filepath.Join(tenants, "_tok", fmt.Sprintf("%x", "arg:TEAM=x")), stale); err != nil {
		t.Fatal(err)
	}
	if r := cliRun("fsck", "--data-dir", dataDir); r.Exit == 0 || !strings.Contains(string(r.Stdout), "10.234.9.200") {
		t.Errorf("fsck of a stale tenant record: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := cliRun("fsck", "--data-dir", dataDir, "--repair"); r.Exit != 0 {
		t.Errorf("fsck --repair: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("fsck --repair left the stale tenant record")
	}
	gc := call("ipam-delegated", "GC", "", []byte(strings.Replace(string(conf), `"name":"quota",`, `"name":"quota","cni.dev/valid-attachments":[],`, 1)))
	gc.ContainerID, gc.IfName, gc.Netns = "", "", ""
	testbin.MustSucceed(t, gc)
	for _, p := range []string{"t", "shared"} {
		recs, _ := os.ReadDir(filepath.Join(dataDir, "_pools", p, "_tenants", "_addr"))
		for _, r := range recs {
			if _, err := os.Stat(filepath.Join(dataDir, "_pools", p, r.Name())); err != nil {
				t.Errorf("after GC, pool %s's tenant record %s names a free address", p, r.Name())
			}
		}
	}
}

// The operators' view of quotas: leases names each address's tenant,
// pools counts each tenant's addresses per pool against its quota (table,
// JSON, Prometheus), validate checks a rule's quota.
func TestQuotaOperators(t *testing.T) {
	dir, dataDir := t.TempDir(), t.TempDir()
	ipam := `{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":"` + dataDir + `","namespaceFrom":"kubernetes",
		"rules":[{"namespace":"team-a","pools":["team-a"],"quota":{"per":"namespace","max":3}}],
		"poolDefinitions":{"team-a":{"ranges":[{"subnet":"10.236.1.0/29","rangeStart":"10.236.1.2","rangeEnd":"10.236.1.3"}],"overflow":"shared"},
			"shared":[{"subnet":"10.236.9.0/24"}]}}`
	conflist := filepath.Join(dir, "tenants.conflist")
	writeFile(t, conflist, `{"cniVersion":"1.0.0","name":"tenants","plugins":[{"type":"bridge","ipam":`+ipam+`}]}`)
	conf := []byte(`{"cniVersion":"1.1.0","name":"tenants","ipam":` + ipam + `}`)
	for i := range 3 {
		c := call("ipam-delegated", "ADD", fmt.Sprint("a", i), conf)
		c.Args = fmt.Sprintf("IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=p%d", i)
		testbin.MustSucceed(t, c)
	}
	r := cliRun("leases", "--data-dir", dataDir, "-o", "json")
	var leases []struct{ Address, Pool, Tenant string }
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &leases) != nil || len(leases) != 3 {
		t.Fatalf("leases: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	for _, l := range leases {
		if l.Tenant != "namespace=team-a" {
			t.Errorf("lease %+v: want tenant namespace=team-a", l)
		}
	}
	if r := cliRun("leases", "--data-dir", dataDir); !strings.Contains(string(r.Stdout), "TENANT") || !strings.Contains(string(r.Stdout), `"namespace=team-a"`) {
		t.Errorf("leases table:\n%s", r.Stdout)
	}
	if rows := strings.Join(poolsJSON(t, "--conf", conflist), "\n"); !strings.Contains(rows, "team-a 2 namespace=team-a 2/3") || !strings.Contains(rows, "shared 1 namespace=team-a 1/3") {
		t.Errorf("pools' tenants:\n%s", rows)
	}
	prom := string(cliRun("pools", "--conf", conflist, "-o", "prom").Stdout)
	for _, want := range []string{`cniplugins_tenant_addresses{tenant="namespace=team-a",pool="team-a"} 2`, `cniplugins_tenant_addresses{tenant="namespace=team-a",pool="shared"} 1`,
		`cniplugins_tenant_quota{tenant="namespace=team-a",pool="team-a"} 3`} {
		if !strings.Contains(prom, want) {
			t.Errorf("prom lacks %s:\n%s", want, prom)
		}
	}
	if out := string(cliRun("pools", "--conf", conflist).Stdout); !strings.Contains(out, "TENANTS") || !strings.Contains(out, `"namespace=team-a" 2/3`) {
		t.Errorf("pools table:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.conflist")
	writeFile(t, bad, strings.Replace(`{"cniVersion":"1.0.0","name":"tenants","plugins":[{"type":"bridge","ipam":`+ipam+`}]}`, `"per":"namespace"`, `"per":"label:team"`, 1))
	if r := cliRun("validate", "--cni-path", binDir, bad); r.Exit == 0 || !strings.Contains(string(r.Stdout)+string(r.Stderr), "ipam.rules[0].quota.per") {
		t.Errorf("validate of a bad quota: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
}
