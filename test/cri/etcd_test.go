package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/etcdtest"
)

// etcdIPAM is the tenants network with ipam-da-etcd as the allocator: the
// claims live in a 3-member etcd cluster instead of the data dir.
const etcdIPAM = `{
  "type": "ipam-delegated",
  "delegates": ["ipam-ds-args", "ipam-da-etcd"],
  "rules": [{"namespace": "team-a", "pools": ["team-a"]}],
  "defaultPools": ["others"],
  "poolDefinitions": {
    "team-a": [{"subnet": "10.252.0.0/16", "rangeStart": "10.252.10.0", "rangeEnd": "10.252.10.255", "gateway": "10.252.0.1"}],
    "others": [{"subnet": "10.252.0.0/16", "rangeStart": "10.252.40.0", "rangeEnd": "10.252.40.255", "gateway": "10.252.0.1"}]
  },
  "routes": [{"dst": "0.0.0.0/0"}],
  "dataDir": %%q,
  "etcd": {"endpoints": %s, "prefix": "/cnpcri/", "nodeName": "cri-node"}
}`

// etcdClaims is `cniplugins leases --etcd` for the test's prefix.
func etcdClaims(t *testing.T, endpoints []string) []lease {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cniplugins"), "leases", "--etcd", strings.Join(endpoints, ","), "--prefix", "/cnpcri/", "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("leases --etcd: %v: %s", err, stderr.String())
	}
	var ls []lease
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatalf("leases --etcd -o json: %v: %s", err, out)
	}
	return ls
}

// The same pods through ipam-da-etcd: namespaces choose pools, the claims
// in etcd are exactly the running pods', gc --cri --etcd plans nothing
// while they run, and stop + remove leaves no claim behind.
func TestEtcdAllocatorUnderCRI(t *testing.T) {
	needCRI(t)
	if err := etcdtest.Available(); err != nil {
		t.Fatalf("etcd missing: run scripts/test-deps.sh (Debian package etcd-server): %v", err)
	}
	cluster, err := etcdtest.Start(etcdtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	endpoints, _ := json.Marshal(cluster.Endpoints())
	c := extraContainerd(t, network{name: "cnpcrie", bridge: "cnpcri1"}, fmt.Sprintf(etcdIPAM, endpoints))

	var pods []pod
	for i, ns := range []string{"team-a", "team-a", "default"} {
		p, err := c.runPod(context.Background(), ns, fmt.Sprintf("e-%d", i), nil)
		if err != nil {
			t.Fatalf("RunPodSandbox %s: %v", ns, err)
		}
		pods = append(pods, p)
		third := byte(40)
		if ns == "team-a" {
			third = 10
		}
		if !inSubnet(p.ip, 252, third) {
			t.Errorf("%s/%s got %s, want 10.252.%d.0/24", ns, p.name, p.ip, third)
		}
	}
	claims := etcdClaims(t, cluster.Endpoints())
	if len(claims) != len(pods) {
		t.Fatalf("%d pods, %d claims in etcd: %+v", len(pods), len(claims), claims)
	}
	for _, p := range pods {
		if l, ok := leaseOf(claims, p.id); !ok || l.Address != p.ip.String() {
			t.Errorf("pod %s (%s): claim %+v", p.name, p.ip, l)
		}
	}
	out, err := exec.Command(filepath.Join(binDir, "cniplugins"), "gc", "--cri", c.sock, "--etcd", strings.Join(cluster.Endpoints(), ","),
		"--prefix", "/cnpcri/", "--node", "cri-node", "--min-age", "0", "-o", "json").CombinedOutput()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "[]") {
		t.Errorf("gc --cri --etcd with every pod running: %v: %s; want an empty plan", err, out)
	}
	for _, p := range pods {
		c.removePod(t, p)
	}
	if claims := etcdClaims(t, cluster.Endpoints()); len(claims) != 0 {
		t.Errorf("claims left in etcd after stop and remove: %+v", claims)
	}
}
