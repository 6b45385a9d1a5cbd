package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// retryNet is a chain whose one rule gives each value of the pod
// annotation team a quota of 3 across pool h (two addresses) and its
// overflow o, with VMs keyed by "kubevirt": what a tenant choosing its
// own annotation values, as issue 38's attacker did, is given.
type retryNet struct{ dataDir string }

// call is cmd for pod id of tenant team in namespace ns, with the extra
// annotations (JSON members, "" none).
func (n retryNet) call(cmd, id, team, extra string) testbin.Call {
	annotations := fmt.Sprintf(`{"team":%q%s}`, team, extra)
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"retry","ipam":{"type":"ipam-delegated",
		"delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,"namespaceFrom":"kubernetes",
		"rules":[{"annotations":{"team":"*"},"pools":[{"name":"h","subnet":"10.237.1.0/29","rangeStart":"10.237.1.2","rangeEnd":"10.237.1.3","overflow":"o"}],
			"quota":{"per":"annotation:team","max":3}}],
		"poolDefinitions":{"o":[{"subnet":"10.237.9.0/24"}]},
		"sticky":{"by":["kubevirt"],"holdFor":"0"}},
		"runtimeConfig":{"io.kubernetes.cri.pod-annotations":%s},
		"capabilities":{"io.kubernetes.cri.pod-annotations":true}}`, n.dataDir, annotations)
	c := call("ipam-delegated", cmd, id, conf)
	c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=pod-" + id
	return c
}

func (n retryNet) add(t *testing.T, id, team string) string {
	t.Helper()
	return parseResult(t, testbin.MustSucceed(t, n.call("ADD", id, team, "")).Stdout).IPs[0].Address
}

// owners maps each reserved address to its container (leases).
func (n retryNet) owners(t *testing.T) map[string]string {
	t.Helper()
	r := cliRun("leases", "--data-dir", n.dataDir, "-o", "json")
	var leases []struct{ Address, ContainerID string }
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &leases) != nil {
		t.Fatalf("leases: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	out := map[string]string{}
	for _, l := range leases {
		out[l.Address] = l.ContainerID
	}
	return out
}

// A retried ADD of a live attachment is 102 naming its address, at its
// tenant's quota as below it, wherever in the chain the address is, and
// the chain's rollback leaves it the address; a migration target whose
// VM holds nothing is 107 at the quota as below it.
func TestQuotaRetriedAddAndMigrationTarget(t *testing.T) {
	n := retryNet{t.TempDir()}
	ips := map[string]string{}
	for _, id := range []string{"a0", "a1", "a2"} { // a2 spills into o
		ips[id] = strings.Split(n.add(t, id, "x"), "/")[0]
	}
	if !strings.HasPrefix(ips["a2"], "10.237.9.") {
		t.Fatalf("a2 got %s, want o's", ips["a2"])
	}
	kept := func(when string) {
		t.Helper()
		owners := n.owners(t)
		for id, ip := range ips {
			if owners[ip] != id {
				t.Errorf("%s: %s belongs to %q, want %s", when, ip, owners[ip], id)
			}
		}
	}
	// At the quota (3 of 3).
	wantCode(t, n.call("ADD", "a1", "x", ""), 102, ips["a1"])
	wantCode(t, n.call("ADD", "a2", "x", ""), 102, ips["a2"])
	kept("after retried ADDs at the quota")
	wantCode(t, n.call("ADD", "a3", "x", ""), 106, "inUse=3")
	wantCode(t, n.call("ADD", "vm-target", "x", `,"kubevirt.io/domain":"none","kubevirt.io/migrationJobName":"m1"`), 107, "none")
	// Below it (2 of 3).
	testbin.MustSucceed(t, n.call("DEL", "a0", "x", ""))
	delete(ips, "a0")
	wantCode(t, n.call("ADD", "a1", "x", ""), 102, ips["a1"])
	wantCode(t, n.call("ADD", "vm-target", "x", `,"kubevirt.io/domain":"none","kubevirt.io/migrationJobName":"m1"`), 107, "none")
	kept("after retried ADDs below the quota")
	if r := cliRun("fsck", "--data-dir", n.dataDir); r.Exit != 0 {
		t.Errorf("fsck: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
}
