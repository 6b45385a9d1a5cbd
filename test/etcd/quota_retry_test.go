package etcd

import (
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// retryConf is ipam-delegated → ipam-ds-args → ipam-da-etcd whose one rule
// gives each value of the pod annotation team a quota of 2, with VMs keyed
// by "kubevirt"; the pod's annotations are team=x and the extra members
// (JSON, "" none).
func retryConf(t *testing.T, h host, extra string) []byte {
	return []byte(strings.Replace(string(mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "retry-net",
		"ipam": map[string]any{
			"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-etcd"}, "namespaceFrom": "kubernetes",
			"rules":           []map[string]any{{"annotations": map[string]string{"team": "*"}, "pools": []string{"rq"}, "quota": map[string]any{"per": "annotation:team", "max": 2}}},
			"poolDefinitions": map[string]any{"rq": []map[string]string{{"subnet": "10.214.30.0/24"}}},
			"sticky":          map[string]any{"by": []string{"kubevirt"}, "holdFor": "0"},
			"dataDir":         h.dir, "etcd": etcdKeys(t, h, nil),
		},
		"runtimeConfig": map[string]any{"io.kubernetes.cri.pod-annotations": map[string]string{"team": "x"}},
	})), `"team":"x"}`, `"team":"x"`+extra+`}`, 1))
}

// A retried ADD of a live attachment is 102 at its tenant's quota as
// below it, and the chain's rollback leaves it its claim; a migration
// target whose VM holds nothing is 107 at the quota as below it.
func TestQuotaRetriedAddAndMigrationTarget(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := retryConf(t, h, "")
	add := func(cid string, c []byte) testbin.Reply {
		return call("ipam-delegated", "ADD", cid, c, "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=pod-"+cid)
	}
	target := retryConf(t, h, `,"kubevirt.io/domain":"none","kubevirt.io/migrationJobName":"m1"`)
	ips := map[string]string{}
	for _, cid := range []string{"r0", "r1"} {
		r := add(cid, conf)
		if r.Exit != 0 {
			t.Fatalf("ADD %s: %s %s", cid, r.Stdout, r.Stderr)
		}
		ips[cid] = addrsOf(t, r.Stdout)[0].String()
	}
	kept := func(when string) {
		t.Helper()
		owners := map[string]string{}
		for _, l := range cliLeases(t) {
			owners[l.Address] = l.ContainerID
		}
		for cid, ip := range ips {
			if owners[ip] != cid {
				t.Errorf("%s: %s lost %s (its owner: %q)", when, cid, ip, owners[ip])
			}
		}
	}
	// At the quota (2 of 2).
	if e := wantCode(t, add("r1", conf), 102); !strings.Contains(e.Details, ips["r1"]) {
		t.Errorf("retried ADD at the quota: %+v, want the address %s named", e, ips["r1"])
	}
	wantCode(t, add("r2", conf), 106)
	wantCode(t, add("vm-target", target), 107)
	kept("after a retried ADD at the quota")
	// Below it (1 of 2).
	testbin.MustSucceed(t, testbin.Call{Plugin: "ipam-delegated", Command: "DEL", ContainerID: "r0", IfName: "eth0",
		Netns: "/var/run/netns/none", Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=pod-r0", Path: binDir, Stdin: conf})
	delete(ips, "r0")
	wantCode(t, add("r1", conf), 102)
	wantCode(t, add("vm-target", target), 107)
	kept("after a retried ADD below the quota")
}
