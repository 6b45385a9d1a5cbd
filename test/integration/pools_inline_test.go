package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// pools lists the Pool objects written inline in ipam-ds-args rules and
// defaultPools with their usage and tenants after real ADDs, each tenant
// with its own rule's quota (two rules share the pool, max 3 and max 5),
// in the table, JSON and Prometheus outputs; a default another conflist
// defines differently is a row per definition, with a warning.
func TestPoolsInlinePools(t *testing.T) {
	dir, dataDir := t.TempDir(), t.TempDir()
	ipam := `{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":"` + dataDir + `","namespaceFrom":"kubernetes",
		"rules":[{"namespace":"team-a","pools":[{"name":"inl","subnet":"10.237.1.0/29"}],"quota":{"per":"namespace","max":3}},
			{"namespace":"team-b","pools":["inl"],"quota":{"per":"namespace","max":5}}],
		"defaultPools":[{"name":"dflt","subnet":"10.237.9.0/29"}]}`
	conflist := filepath.Join(dir, "10-inline.conflist")
	writeFile(t, conflist, `{"cniVersion":"1.0.0","name":"inline","plugins":[{"type":"bridge","ipam":`+ipam+`}]}`)
	conf := []byte(`{"cniVersion":"1.1.0","name":"inline","ipam":` + ipam + `}`)
	for i, ns := range []string{"team-a", "team-b", "team-b", "misc"} {
		c := call("ipam-delegated", "ADD", fmt.Sprint("c", i), conf)
		c.Args = fmt.Sprintf("IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=p%d", ns, i)
		testbin.MustSucceed(t, c)
	}
	if got, want := strings.Join(poolsJSON(t, "--conf", conflist), "\n"), "inl 3 namespace=team-a 1/3 namespace=team-b 2/5\ndflt 1"; got != want {
		t.Errorf("pools:\n%s\nwant\n%s", got, want)
	}
	prom := string(cliRun("pools", "--conf", conflist, "-o", "prom").Stdout)
	for _, want := range []string{`cniplugins_ipam_used_addresses{kind="pool",name="inl",range_set="",networks="inline"} 3`,
		`cniplugins_ipam_used_addresses{kind="pool",name="dflt",range_set="",networks="inline"} 1`,
		`cniplugins_tenant_quota{tenant="namespace=team-b",pool="inl"} 5`} {
		if !strings.Contains(prom, want+"\n") {
			t.Errorf("prom lacks %s:\n%s", want, prom)
		}
	}
	if out := string(cliRun("pools", "--conf", conflist).Stdout); !strings.Contains(out, `"namespace=team-b" 2/5`) {
		t.Errorf("pools table:\n%s", out)
	}

	other := filepath.Join(dir, "20-other.conflist")
	writeFile(t, other, `{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"bridge","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":"`+dataDir+`","defaultPools":[{"name":"dflt","subnet":"10.237.8.0/29"}]}}]}`)
	r := cliRun("pools", "--conf-dir", dir)
	if r.Exit != 0 || !strings.Contains(string(r.Stdout), "CONFLICT") || strings.Count(string(r.Stdout), " dflt ") != 2 ||
		!strings.Contains(string(r.Stderr), "warning: pool dflt, as "+conflist+" (plugins[0].ipam.defaultPools[0]) defines it; defined differently in "+other+" (plugins[0].ipam.defaultPools[0]: 10.237.8.1-10.237.8.6)") {
		t.Errorf("pools with a conflicting default: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := cliRun("validate", "--cni-path", binDir, dir); r.Exit != 1 || !strings.Contains(string(r.Stdout), "pool dflt is defined differently in "+conflist) {
		t.Errorf("validate of the conflict: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
}
