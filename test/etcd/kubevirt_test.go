package etcd

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// A KubeVirt VM's live migrations across hosts (docs/sticky.md, "KubeVirt
// live migration"): the real ipam-da-etcd on two hosts sharing the
// cluster, the source on one, each target on the other.

// vmConf is host h's config keyed by "kubevirt", for a virt-launcher pod
// of VM domain started for migration mig ("" for none).
func vmConf(t *testing.T, h host, domain, mig string) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "ranges": [][]map[string]any{{{"subnet": "10.214.60.0/24"}}}, "dataDir": h.dir,
		"etcd": etcdKeys(t, h, map[string]any{}), "sticky": map[string]any{"by": []string{"kubevirt"}, "holdFor": "0"}}
	annotations := map[string]string{"kubevirt.io/domain": domain}
	if mig != "" {
		annotations["kubevirt.io/migrationJobName"] = mig
	}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "vm-net", "ipam": ipam,
		"runtimeConfig": map[string]any{"io.kubernetes.cri.pod-annotations": annotations}})
}

func vmCall(t *testing.T, cmd string, h host, cid, domain, mig string) testbin.Reply {
	return call("ipam-da-etcd", cmd, cid, vmConf(t, h, domain, mig), "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-"+cid)
}

func vmAdd(t *testing.T, h host, cid, domain, mig string) (testbin.Reply, netip.Addr) {
	t.Helper()
	r := vmCall(t, "ADD", h, cid, domain, mig)
	if r.Exit != 0 {
		t.Fatalf("ADD %s (%s, migration %q): exit %d\nstdout: %s\nstderr: %s", cid, domain, mig, r.Exit, r.Stdout, r.Stderr)
	}
	return r, addrsOf(t, r.Stdout)[0]
}

func vmRun(t *testing.T, cmd string, h host, cid, domain, mig string, prev []byte) {
	t.Helper()
	conf := vmConf(t, h, domain, mig)
	if prev != nil {
		conf = withPrev(t, conf, prev)
	}
	r := call("ipam-da-etcd", cmd, cid, conf, "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-"+cid)
	if r.Exit != 0 {
		t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", cmd, cid, r.Exit, r.Stdout, r.Stderr)
	}
}

// vmChecks asserts whether cid on h has ip (CHECK with it as prevResult).
func vmChecks(t *testing.T, h host, cid string, ip netip.Addr, want bool) {
	t.Helper()
	prev := fmt.Appendf(nil, `{"cniVersion":"1.1.0","ips":[{"address":"%s/24"}]}`, ip)
	r := call("ipam-da-etcd", "CHECK", cid, withPrev(t, vmConf(t, h, "pg", ""), prev), "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms")
	if (r.Exit == 0) != want {
		t.Errorf("CHECK of %s for %s on %s: has it %v, want %v (%s)", ip, cid, h.node, r.Exit == 0, want, r.Stdout)
	}
}

func TestKubevirtLiveMigrationAcrossHosts(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	rSrc, ip := vmAdd(t, a, "src", "pg", "")
	// The target on host-b shares it while the source runs on host-a.
	rT1, got := vmAdd(t, b, "tgt1", "pg", "mig-1")
	if got != ip {
		t.Fatalf("the target got %s, want the source's %s", got, ip)
	}
	vmChecks(t, a, "src", ip, true)
	vmChecks(t, b, "tgt1", ip, true)
	r := cli(t, "leases", "-o", "json")
	var ls []map[string]any
	if err := json.Unmarshal(r.Stdout, &ls); err != nil || r.Exit != 0 {
		t.Fatalf("leases: %s %s", r.Stdout, r.Stderr)
	}
	shown := 0
	for _, l := range ls {
		if l["address"] == ip.String() && l["secondOwner"] == "tgt1" {
			shown++
		}
	}
	if shown != 2 {
		t.Errorf("leases shows the second owner in %d rows, want the source's and the target's: %s", shown, r.Stdout)
	}
	// A third pod is refused, its rollback DEL releases nothing; a pod
	// with the live owner's migration name waits too.
	wantCode(t, vmCall(t, "ADD", a, "third", "pg", "mig-2"), 105)
	vmRun(t, "DEL", a, "third", "pg", "mig-2", nil)
	vmChecks(t, a, "src", ip, true)
	vmChecks(t, b, "tgt1", ip, true)
	// The migration fails: the target's DEL (with its prevResult: the
	// one-round-trip path must leave the source's claim alone).
	vmRun(t, "DEL", b, "tgt1", "pg", "mig-1", rT1.Stdout)
	vmChecks(t, a, "src", ip, true)
	vmChecks(t, b, "tgt1", ip, false)
	// Another migration succeeds: the source's DEL, with its prevResult.
	if _, got := vmAdd(t, b, "tgt2", "pg", "mig-2"); got != ip {
		t.Fatalf("the second target got %s, want %s", got, ip)
	}
	vmRun(t, "DEL", a, "src", "pg", "", rSrc.Stdout)
	vmChecks(t, b, "tgt2", ip, true)
	vmChecks(t, a, "src", ip, false)
	// The next migration, back to host-a; its source carries mig-2.
	wantCode(t, vmCall(t, "ADD", a, "tgt3", "pg", "mig-2"), 105)
	if _, got := vmAdd(t, a, "tgt3", "pg", "mig-3"); got != ip {
		t.Fatalf("the third migration's target got %s, want %s", got, ip)
	}
	vmRun(t, "DEL", b, "tgt2", "pg", "mig-2", nil) // the read path this time
	vmChecks(t, a, "tgt3", ip, true)
	// Unrelated pods and another VM never get it; a target of a VM that
	// holds nothing is 107.
	for i := range 4 {
		if _, got := vmAdd(t, b, fmt.Sprint("web-", i), "", ""); got == ip {
			t.Fatalf("%s handed to a pod without a key", ip)
		}
	}
	if _, got := vmAdd(t, b, "other-vm", "other", ""); got == ip {
		t.Fatalf("%s handed to another VM", ip)
	}
	wantCode(t, vmCall(t, "ADD", b, "ghost", "none", "mig-9"), 107)
	// Deleted, the VM's address is held for it, on any host.
	vmRun(t, "DEL", a, "tgt3", "pg", "mig-3", nil)
	if _, got := vmAdd(t, b, "restart", "pg", ""); got != ip {
		t.Errorf("the VM got %s after a restart on host-b, want %s", got, ip)
	}
}
