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

// kubevirtNet is a standalone ipam-da-pools network whose VMs are keyed
// by "kubevirt", held until released.
type kubevirtNet struct{ dataDir string }

// call is cmd for virt-launcher container id of VM domain in namespace
// vms, started for migration mig ("" for none).
func (n kubevirtNet) call(cmd, id, domain, mig string) testbin.Call {
	annotations := fmt.Sprintf(`{"kubevirt.io/domain":%q`, domain)
	if mig != "" {
		annotations += fmt.Sprintf(`,"kubevirt.io/migrationJobName":%q`, mig)
	}
	conf := fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":"vms","ipam":{"type":"ipam-da-pools","dataDir":%q,
		"ranges":[[{"subnet":"10.89.0.0/28"}]],"sticky":{"by":["kubevirt"],"holdFor":"0"}},
		"runtimeConfig":{"io.kubernetes.cri.pod-annotations":%s}}}`, n.dataDir, annotations)
	c := call("ipam-da-pools", cmd, id, conf)
	c.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-" + id
	return c
}

func (n kubevirtNet) add(t *testing.T, id, domain, mig string) string {
	t.Helper()
	return parseResult(t, testbin.MustSucceed(t, n.call("ADD", id, domain, mig)).Stdout).IPs[0].Address
}

func (n kubevirtNet) del(t *testing.T, id, domain, mig string) {
	t.Helper()
	testbin.MustSucceed(t, n.call("DEL", id, domain, mig))
}

// check asserts that container id has addr (CHECK with it as prevResult).
func (n kubevirtNet) check(t *testing.T, id, domain, addr string, want bool) {
	t.Helper()
	c := n.call("CHECK", id, domain, "")
	c.Stdin = []byte(strings.Replace(string(c.Stdin), `"runtimeConfig"`,
		fmt.Sprintf(`"prevResult":{"cniVersion":"1.1.0","ips":[{"address":%q}]},"runtimeConfig"`, addr), 1))
	if got := testbin.Run(c).Err() == nil; got != want {
		t.Errorf("CHECK of %s for %s: has it %v, want %v", addr, id, got, want)
	}
}

// A VM keeps its address through live migrations on ipam-da-pools: the
// whole sequence, each step a real exec.
func TestKubevirtLiveMigration(t *testing.T) {
	n := kubevirtNet{t.TempDir()}
	ip := n.add(t, "src", "pg", "")
	// A migration target shares it while the source runs.
	if got := n.add(t, "tgt1", "pg", "mig-1"); got != ip {
		t.Fatalf("the target got %s, want the source's %s", got, ip)
	}
	n.check(t, "src", "pg", ip, true)
	n.check(t, "tgt1", "pg", ip, true)
	// A third pod is refused, and its rollback DEL releases nothing.
	wantCode(t, n.call("ADD", "third", "pg", "mig-2"), 105, "two live attachments")
	n.del(t, "third", "pg", "mig-2")
	wantCode(t, n.call("ADD", "third", "pg", ""), 105, "pg")
	n.del(t, "third", "pg", "")
	n.check(t, "src", "pg", ip, true)
	n.check(t, "tgt1", "pg", ip, true)
	// The migration fails: the target's DEL leaves the source the owner.
	n.del(t, "tgt1", "pg", "mig-1")
	n.check(t, "src", "pg", ip, true)
	n.check(t, "tgt1", "pg", ip, false)
	// A new migration; it succeeds: the source's DEL leaves the target it.
	if got := n.add(t, "tgt2", "pg", "mig-2"); got != ip {
		t.Fatalf("the second target got %s, want %s", got, ip)
	}
	n.del(t, "src", "pg", "")
	n.check(t, "tgt2", "pg", ip, true)
	if got, _ := os.ReadFile(filepath.Join(n.dataDir, "vms", strings.TrimSuffix(ip, "/28"))); string(got) != "tgt2\r\neth0" {
		t.Errorf("the address's reservation after the handover: %q", got)
	}
	// A second migration whose source carries the first one's name: a
	// target with that same name waits, one with its own name shares.
	wantCode(t, n.call("ADD", "tgt3", "pg", "mig-2"), 105, "pg")
	if got := n.add(t, "tgt3", "pg", "mig-3"); got != ip {
		t.Fatalf("the next migration's target got %s, want %s", got, ip)
	}
	n.del(t, "tgt2", "pg", "mig-2")
	n.check(t, "tgt3", "pg", ip, true)
	// An unrelated pod, another VM, and a target of a VM that holds
	// nothing never get the address.
	for i := range 4 {
		id := fmt.Sprint("web-", i)
		if got := n.add(t, id, "", ""); got == ip {
			t.Fatalf("%s handed to the keyless %s", ip, id)
		}
	}
	if got := n.add(t, "other-vm", "other", ""); got == ip {
		t.Fatalf("%s handed to another VM", ip)
	}
	wantCode(t, n.call("ADD", "ghost", "none", "mig-9"), 107, "none")
	// Deleted, the VM's address is held until its key is released.
	n.del(t, "tgt3", "pg", "mig-3")
	if got := n.add(t, "restart", "pg", ""); got != ip {
		t.Errorf("the VM got %s after a restart, want %s", got, ip)
	}
}

// leaseOf is `cniplugins leases -o json`'s entry for ip.
func (n kubevirtNet) leaseOf(t *testing.T, ip string) map[string]any {
	t.Helper()
	out := cliRun("leases", "--data-dir", n.dataDir, "-o", "json")
	if out.Exit != 0 {
		t.Fatalf("leases: %d %s", out.Exit, out.Stderr)
	}
	var leases []map[string]any
	if err := json.Unmarshal(out.Stdout, &leases); err != nil {
		t.Fatalf("leases: %v %s", err, out.Stdout)
	}
	for _, l := range leases {
		if l["address"] == strings.TrimSuffix(ip, "/28") {
			return l
		}
	}
	t.Fatalf("no lease of %s in %s", ip, out.Stdout)
	return nil
}

// The operators see and handle a migration's second owner: leases names
// it, release --container of the target ends its share, release of the
// address hands it to the target, fsck finds nothing wrong throughout.
func TestKubevirtMigrationOperators(t *testing.T) {
	n := kubevirtNet{t.TempDir()}
	ip := n.add(t, "src", "pg", "")
	n.add(t, "tgt1", "pg", "mig-1")
	fsckClean := func() {
		t.Helper()
		if out := cliRun("fsck", "--data-dir", n.dataDir); out.Exit != 0 {
			t.Errorf("fsck during a migration: %d %s %s", out.Exit, out.Stdout, out.Stderr)
		}
	}
	fsckClean()
	if l := n.leaseOf(t, ip); l["containerID"] != "src" || l["secondOwner"] != "tgt1" || l["secondMigration"] != "mig-1" {
		t.Errorf("lease during the migration: %v", l)
	}
	if out := cliRun("leases", "--data-dir", n.dataDir); !strings.Contains(string(out.Stdout), "SECOND-OWNER") || !strings.Contains(string(out.Stdout), "tgt1") {
		t.Errorf("leases' table shows no second owner:\n%s", out.Stdout)
	}
	if got := n.migrating(t); got != 1 {
		t.Errorf("pools counts %v addresses migrating, want 1", got)
	}
	addr := strings.TrimSuffix(ip, "/28")
	if out := cliRun("release", addr, "--data-dir", n.dataDir, "--network", "vms", "--container", "tgt1"); out.Exit != 0 || !strings.Contains(string(out.Stdout), "share") {
		t.Fatalf("release of the target's share: %d %s %s", out.Exit, out.Stdout, out.Stderr)
	}
	n.check(t, "src", "pg", ip, true)
	n.check(t, "tgt1", "pg", ip, false)
	if l := n.leaseOf(t, ip); l["secondOwner"] != nil {
		t.Errorf("lease after the share ended: %v", l)
	}
	n.add(t, "tgt2", "pg", "mig-2")
	if out := cliRun("release", addr, "--data-dir", n.dataDir, "--network", "vms"); out.Exit != 0 || !strings.Contains(string(out.Stdout), "migration target") {
		t.Fatalf("release of the shared address: %d %s %s", out.Exit, out.Stdout, out.Stderr)
	}
	n.check(t, "tgt2", "pg", ip, true)
	n.check(t, "src", "pg", ip, false)
	if l := n.leaseOf(t, ip); l["containerID"] != "tgt2" || l["secondOwner"] != nil {
		t.Errorf("lease after the handover: %v", l)
	}
	fsckClean()
	if got := n.migrating(t); got != 0 {
		t.Errorf("pools counts %v addresses migrating after the handover, want 0", got)
	}
}

// migrating is `cniplugins pools -o json`'s count of addresses two
// owners share, the network's conflist in a conf dir of its own.
func (n kubevirtNet) migrating(t *testing.T) float64 {
	t.Helper()
	confDir := t.TempDir()
	var ipam map[string]any
	var conf struct {
		IPAM map[string]any `json:"ipam"`
	}
	if err := json.Unmarshal(n.call("ADD", "x", "pg", "").Stdin, &conf); err != nil {
		t.Fatal(err)
	}
	ipam = conf.IPAM
	list, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "vms", "plugins": []any{map[string]any{"type": "bridge", "ipam": ipam}}})
	if err := os.WriteFile(filepath.Join(confDir, "10-vms.conflist"), list, 0o644); err != nil {
		t.Fatal(err)
	}
	out := cliRun("pools", "--conf-dir", confDir, "-o", "json")
	var us []map[string]any
	if err := json.Unmarshal(out.Stdout, &us); err != nil || len(us) != 1 {
		t.Fatalf("pools: %d %v %s %s", out.Exit, err, out.Stdout, out.Stderr)
	}
	m, _ := us[0]["migrating"].(float64)
	return m
}
