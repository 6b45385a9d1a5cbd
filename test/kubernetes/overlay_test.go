package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// The tests install cniplugins as docs/kubernetes.md tells a user to: the
// image imported into the node's containerd, then `kubectl apply -k` of
// an overlay of deploy/kubernetes that changes only what a node's layout
// and the user's pools make different: the image's name and tag, the
// hostPaths (the node's directories are temporary ones here), the GC
// loop's pace, and the ConfigMap's conflist.

// overlay is what the tests' kustomization sets.
type overlay struct {
	tag string // the image tag
	// cappedMax is the quota of namespace capped.
	cappedMax int
	// metrics adds deploy/kubernetes/components/metrics and podmonitor
	// (the cluster has the Prometheus Operator's PodMonitor CRD).
	metrics bool
}

// testConflist is the ConfigMap's conflist: pools of 10.240.0.0/16 (a
// subnet no other test uses) behind one bridge; team-a's pool holds 8
// addresses and overflows into the shared one, every unnamed namespace
// draws from the shared one, capped has a quota, db is sticky.
const testConflist = `{
  "cniVersion": "1.0.0",
  "name": "k8s-test",
  "plugins": [
    {
      "type": "bridge", "bridge": %[3]q, "isGateway": true, "ipMasq": false,
      "capabilities": { "io.kubernetes.cri.pod-annotations": true },
      "ipam": {
        "type": "ipam-delegated",
        "delegates": ["ipam-ds-args", "ipam-da-pools"],
        "namespaceFrom": "kubernetes",
        "rules": [
          { "namespace": "team-a", "pools": ["team-a"] },
          { "namespace": "team-b", "pools": ["team-b"] },
          { "namespace": "capped", "pools": ["capped"], "quota": { "per": "namespace", "max": %[2]d } },
          { "namespace": "db", "pools": ["db"], "sticky": true }
        ],
        "defaultPools": ["shared"],
        "poolDefinitions": {
          "team-a": { "ranges": [{ "subnet": "10.240.0.0/16", "rangeStart": "10.240.1.1", "rangeEnd": "10.240.1.8", "gateway": "10.240.0.1" }], "overflow": "shared" },
          "team-b": [{ "subnet": "10.240.0.0/16", "rangeStart": "10.240.2.1", "rangeEnd": "10.240.2.100", "gateway": "10.240.0.1" }],
          "capped": [{ "subnet": "10.240.0.0/16", "rangeStart": "10.240.3.1", "rangeEnd": "10.240.3.100", "gateway": "10.240.0.1" }],
          "db": [{ "subnet": "10.240.0.0/16", "rangeStart": "10.240.4.1", "rangeEnd": "10.240.4.100", "gateway": "10.240.0.1" }],
          "shared": [{ "subnet": "10.240.0.0/16", "rangeStart": "10.240.100.0", "rangeEnd": "10.240.101.255", "gateway": "10.240.0.1" }]
        },
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": %[1]q
      }
    },
    { "type": "loopback" }
  ]
}`

// pools' ranges, as the assertions read them.
var poolPrefixes = map[string]string{
	"team-a": "10.240.1.", "team-b": "10.240.2.", "capped": "10.240.3.", "db": "10.240.4.", "shared": "10.240.10",
}

// poolOf is the pool whose range holds ip.
func poolOf(ip string) string {
	for p, prefix := range poolPrefixes {
		if strings.HasPrefix(ip, prefix) {
			return p
		}
	}
	return ""
}

// write writes the overlay into dir: dir/node, the base with the node's
// paths and the user's conflist, and dir itself, which adds the image and
// the optional component on top, as a user's overlay would.
func (o overlay) write(c *cluster, dir string) error {
	nodeDir := filepath.Join(dir, "node")
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return err
	}
	base, err := filepath.Rel(nodeDir, k8smanifest.Dir())
	if err != nil {
		return err
	}
	top, err := filepath.Rel(dir, k8smanifest.Dir())
	if err != nil {
		return err
	}
	components := ""
	if o.metrics {
		components = "components:\n  - " + filepath.Join(top, "components", "metrics") + "\n  - " + filepath.Join(top, "components", "podmonitor") + "\n"
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: kube-system
resources:
  - node
%simages:
  - name: ghcr.io/cniplugins/cniplugins-full
    newName: %s
    newTag: %s
`, components, imageRepo, o.tag)
	nodeKustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
patches:
  - path: node.yaml
  - path: conflist.yaml
`, base)
	// The GC loop's pace is a test's: a reservation is released within
	// seconds once it is a minute old. The data dir is mounted where the
	// conflist (run on the host) keeps it.
	node := fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cniplugins
  namespace: kube-system
spec:
  template:
    spec:
      containers:
        - name: install
          args:
            - k8s-install
            - --bin-dir=/host/opt/cni/bin
            - --conf-source=/etc/cniplugins/net.d
            - --net-dir=/host/etc/cni/net.d
            - --watch
            - --interval=2s
            - --gc-cri=/run/containerd/containerd.sock
            - --data-dir=/var/lib/cni/networks
            - --gc-interval=5s
            - --gc-min-age=1m
      volumes:
        - name: cni-bin
          hostPath: {path: %q}
        - name: cni-net
          hostPath: {path: %q}
        - name: ipam-data
          hostPath: {path: %q}
        - name: containerd-socket
          hostPath: {path: %q}
`, c.CNIBin, c.NetDir, c.dataDir, c.ContainerdSock)
	conflist := fmt.Sprintf(testConflist, c.dataDir, o.cappedMax, bridgeName)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cniplugins-conflist\n  namespace: kube-system\ndata:\n  10-k8s-tenants.conflist: |\n" + indent(conflist, "    ")
	files := map[string]string{
		"kustomization.yaml": kustomization, "node/kustomization.yaml": nodeKustomization,
		"node/node.yaml": node, "node/conflist.yaml": cm,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// install applies o with kubectl apply -k.
func (c *cluster) install(t *testing.T, o overlay) {
	t.Helper()
	dir := filepath.Join(c.root, "overlay")
	if err := o.write(c, dir); err != nil {
		t.Fatal(err)
	}
	c.kubectl(t, "apply", "-k", dir)
}

// importImage builds the full flavour's image of binary as repo:tag and
// imports it into the node's containerd.
func (c *cluster) importImage(t *testing.T, binary, tag string) {
	t.Helper()
	archive, err := ctrimage.CNIPlugins(c.root, imageRepo, tag, binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Import(t.Context(), archive); err != nil {
		t.Fatal(err)
	}
}

// runCLI runs the cniplugins binary bin as the CLI, as an operator does.
func runCLI(bin string, args ...string) (string, error) {
	r := testbin.Run(testbin.Call{Path: filepath.Dir(bin), Plugin: filepath.Base(bin), Argv: args})
	if r.Exit != 0 {
		return string(r.Stdout), fmt.Errorf("cniplugins %s: exit %d: %s", strings.Join(args, " "), r.Exit, r.Stderr)
	}
	return string(r.Stdout), nil
}

// podMonitorCRD stands for the Prometheus Operator's CRD, as a cluster
// running the operator has it: the API server then stores PodMonitors,
// which the podmonitor component makes. The schema is the operator's
// business; this one keeps any field.
const podMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: podmonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PodMonitor, listKind: PodMonitorList, plural: podmonitors, singular: podmonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
