package etcd

import (
	"maps"
	"strings"
	"testing"
)

// identityConf is host h's standalone config with ipam.sticky by by,
// ipam.namespaceFrom from ("" unset) and the pod's annotations.
func identityConf(t *testing.T, h host, by, from string, annotations map[string]string) []byte {
	ipam := map[string]any{"type": "ipam-da-etcd", "ranges": [][]map[string]any{{{"subnet": "10.214.70.0/24"}}}, "dataDir": h.dir,
		"etcd": etcdKeys(t, h, map[string]any{}), "sticky": map[string]any{"by": []string{by}}}
	if from != "" {
		ipam["namespaceFrom"] = from
	}
	return mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "etcd-net", "ipam": ipam,
		"runtimeConfig": map[string]any{"io.kubernetes.cri.pod-annotations": annotations}})
}

// A migration name shares an address for a VM's key alone: a second live
// pod of the namespace presenting pg-0's annotation key and a
// kubevirt.io/migrationJobName, on another host, is 105 as any other, and
// the cluster's state stays as it was.
func TestEtcdMigrationNameOnlyForVMKeys(t *testing.T) {
	needCluster(t)
	a, b := newHost(t, "host-a"), newHost(t, "host-b")
	key := map[string]string{"cniplugins.io/sticky-key": "pg-0"}
	owner := call("ipam-da-etcd", "ADD", "pg-0", identityConf(t, a, "annotation", "", key), "IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=pg-0")
	if owner.Exit != 0 {
		t.Fatalf("ADD pg-0: %s %s", owner.Stdout, owner.Stderr)
	}
	before := stateValues(t)
	key["kubevirt.io/migrationJobName"] = "mig-1"
	r := call("ipam-da-etcd", "ADD", "evil", identityConf(t, b, "annotation", "", key), "IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=evil")
	wantCode(t, r, 105)
	if after := stateValues(t); !maps.Equal(before, after) {
		t.Errorf("the cluster's state changed:\nbefore %v\nafter  %v", before, after)
	}
}

// The allocator's own pod key reads the namespace as a selector does: a
// Nomad job in dev posing as prod, or the namespace given twice, is code
// 7 naming both, and prod/pg-0's hold stays as it was; ipam.namespaceFrom
// is validated (7) and names the runtime.
func TestEtcdPodKeyNamespace(t *testing.T) {
	needCluster(t)
	a := newHost(t, "host-a")
	owner := call("ipam-da-etcd", "ADD", "prod-pg-0", identityConf(t, a, "pod", "", nil), "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0")
	if owner.Exit != 0 {
		t.Fatalf("ADD prod/pg-0: %s %s", owner.Stdout, owner.Stderr)
	}
	held := addrsOf(t, owner.Stdout)[0]
	if r := call("ipam-da-etcd", "DEL", "prod-pg-0", identityConf(t, a, "pod", "", nil), "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0"); r.Exit != 0 {
		t.Fatalf("DEL prod/pg-0: %s", r.Stdout)
	}
	before := stateValues(t)
	parent := t // its etcd prefix is prod's
	for _, tt := range []struct {
		name, from, args string
		names            []string
	}{
		{name: "a Nomad job posing as prod", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev",
			names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
		{name: "the namespace twice", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=dev;K8S_POD_NAME=pg-0;K8S_POD_NAMESPACE=prod",
			names: []string{`K8S_POD_NAMESPACE="dev"`, `K8S_POD_NAMESPACE="prod"`}},
		{name: "namespaceFrom nomad, a job's K8S_POD_NAMESPACE", from: "nomad", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0",
			names: []string{`K8S_POD_NAMESPACE="prod"`, "ipam.namespaceFrom nomad"}},
		{name: "namespaceFrom misspelt", from: "k8s", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0",
			names: []string{"ipam.namespaceFrom"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := call("ipam-da-etcd", "ADD", "spoof", identityConf(parent, a, "pod", tt.from, nil), tt.args)
			e := wantCode(t, r, 7)
			for _, n := range tt.names {
				if e != nil && !strings.Contains(e.Msg+" "+e.Details, n) {
					t.Errorf("%s / %s does not name %s", e.Msg, e.Details, n)
				}
			}
		})
	}
	if after := stateValues(t); !maps.Equal(before, after) {
		t.Errorf("prod/pg-0's hold of %s changed:\nbefore %v\nafter  %v", held, before, after)
	}
}
