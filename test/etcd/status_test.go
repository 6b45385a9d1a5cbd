package etcd

import (
	"strings"
	"testing"
)

// ipam-da-etcd behind ipam-ds-args: STATUS fails (50) only when every
// pool set an ADD could be given holds a full pool; one namespace's full
// pool is that namespace's 100 and the network stays available.
func TestStatusTenantPoolFull(t *testing.T) {
	needCluster(t)
	h := newHost(t, "host-a")
	conf := mustJSON(t, map[string]any{"cniVersion": "1.1.0", "name": "tenants", "ipam": map[string]any{
		"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-etcd"}, "dataDir": h.dir, "etcd": etcdKeys(t, h, nil),
		"rules": []map[string]any{{"namespace": "tenant-a", "pools": []string{"a"}}, {"namespace": "tenant-b", "pools": []string{"b"}}},
		"poolDefinitions": map[string]any{
			"a": []map[string]string{{"subnet": "10.214.40.0/30"}}, "b": []map[string]string{{"subnet": "10.214.40.4/30"}},
		},
	}})
	args := func(ns, pod string) string { return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + pod }
	status := func() { // the chain's STATUS, which must succeed
		t.Helper()
		if r := call("ipam-delegated", "STATUS", "", conf, ""); r.Exit != 0 {
			t.Fatalf("STATUS: %s, want success", r.Stdout)
		}
	}
	fill := func(ns string) {
		t.Helper()
		if r := call("ipam-delegated", "ADD", ns+"-1", conf, args(ns, "p1")); r.Exit != 0 {
			t.Fatalf("ADD in %s: %s", ns, r.Stdout)
		}
		wantCode(t, call("ipam-delegated", "ADD", ns+"-2", conf, args(ns, "p2")), 100)
	}
	status()
	fill("tenant-a")
	status()
	fill("tenant-b")
	e := wantCode(t, call("ipam-delegated", "STATUS", "", conf, ""), 50)
	if !strings.Contains(e.Details, "pool a") || !strings.Contains(e.Details, "pool b") {
		t.Errorf("STATUS details %q, want both full pools named", e.Details)
	}
	if r := call("ipam-delegated", "DEL", "tenant-a-1", conf, args("tenant-a", "p1")); r.Exit != 0 {
		t.Fatalf("DEL: %s", r.Stdout)
	}
	status()
	if r := call("ipam-delegated", "DEL", "tenant-b-1", conf, args("tenant-b", "p1")); r.Exit != 0 {
		t.Fatalf("DEL: %s", r.Stdout)
	}
}
