package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"testing"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// argsWorld is the world of the ipam-ds-args tests: their own names and
// ranges, apart from the other end-to-end tests'.
func argsWorld() world {
	return world{netnsPrefix: "cnpa", bridgePrefix: "cnpa",
		nets: []netip.Prefix{netip.MustParsePrefix("10.211.0.0/16"), netip.MustParsePrefix("fd00:211::/48")}}
}

// criPod is the RuntimeConf containerd's CRI plugin builds for a pod
// sandbox (go-cni's WithLabels, WithCapability for the annotations,
// WithCapabilityPortMap, WithCapabilityCgroupPath): the sandbox ID as
// container ID, eth0, the K8S_* labels with IgnoreUnknown, and the
// capability arguments libcni injects where a plugin declares them.
func criPod(netnsPath, namespace, name string, annotations map[string]string) *libcni.RuntimeConf {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	sandbox := hex.EncodeToString(sum[:])
	uid := hex.EncodeToString(sum[:4]) + "-0000-4000-8000-" + hex.EncodeToString(sum[4:10])
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["io.kubernetes.cri.sandbox-id"] = sandbox
	return &libcni.RuntimeConf{
		ContainerID: sandbox,
		NetNS:       netnsPath,
		IfName:      ifName,
		Args: [][2]string{
			{"K8S_POD_NAMESPACE", namespace},
			{"K8S_POD_NAME", name},
			{"K8S_POD_INFRA_CONTAINER_ID", sandbox},
			{"K8S_POD_UID", uid},
			{"IgnoreUnknown", "1"},
		},
		CapabilityArgs: map[string]interface{}{
			"io.kubernetes.cri.pod-annotations": annotations,
			"portMappings":                      []any{},
			"cgroupPath":                        "/kubepods/besteffort/pod" + uid,
		},
	}
}

// Two pods in different namespaces land in their namespaces' pools, on
// one bridge, each answering its own gateway; a pod may move to a pool its
// rule offers, never to another tenant's; DEL frees each.
func TestArgsNamespacesUnderContainerd(t *testing.T) {
	e := newEnvIn(t, "ns", argsWorld())
	list := e.list(e.example("k8s-namespace-tenants.conflist", "10.60.", "10.211."))

	a := criPod("/var/run/netns/"+e.netns("a"), "team-a", "api-0", map[string]string{"team": "payments"})
	b := criPod("/var/run/netns/"+e.netns("b"), "team-b", "web-0", nil)
	ipA := inRange(t, e.mustAdd(list, a), "10.211.10.0/24")
	resB := e.mustAdd(list, b)
	ipB := inRange(t, resB, "10.211.20.0/24")
	assertConfigured(t, a.NetNS[len("/var/run/netns/"):], ipA)
	assertConfigured(t, b.NetNS[len("/var/run/netns/"):], ipB)
	ping(t, b.NetNS[len("/var/run/netns/"):], gateway(t, resB, ipB))
	ping(t, a.NetNS[len("/var/run/netns/"):], gateway(t, resB, ipB)) // one gateway for every range
	assertReserved(t, e.poolDir("team-a"), map[netip.Addr]string{ipA.Addr(): a.ContainerID})
	assertReserved(t, e.poolDir("team-b"), map[netip.Addr]string{ipB.Addr(): b.ContainerID})
	e.mustCheck(list, a)

	// team-a's pod may pick its batch pool and an address in it.
	c := criPod("/var/run/netns/"+e.netns("c"), "team-a", "batch-0",
		map[string]string{"cniplugins.io/pools": "team-a-batch", "cniplugins.io/ip": "10.211.11.77"})
	if ipC := inRange(t, e.mustAdd(list, c), "10.211.11.0/24"); ipC.Addr() != netip.MustParseAddr("10.211.11.77") {
		t.Errorf("annotated pod got %s, want 10.211.11.77", ipC)
	}
	// team-b's pod may not: 104, and nothing reserved in either pool.
	d := criPod("/var/run/netns/"+e.netns("d"), "team-b", "sneaky-0", map[string]string{"cniplugins.io/pools": "team-a-batch"})
	if _, err := e.add(list, d); cniCode(err) != 104 {
		t.Errorf("team-b pod naming team-a-batch: %v, want code 104", err)
	}
	assertReserved(t, e.poolDir("team-a-batch"), map[netip.Addr]string{netip.MustParseAddr("10.211.11.77"): c.ContainerID})
	assertReserved(t, e.poolDir("team-b"), map[netip.Addr]string{ipB.Addr(): b.ContainerID})

	// containerd's DEL; the batch pod's without its annotations (a DEL
	// may carry less than its ADD) still frees team-a-batch.
	e.mustDel(list, a)
	e.mustDel(list, b)
	c.CapabilityArgs = map[string]interface{}{}
	c.Args = nil
	e.mustDel(list, c)
	for _, p := range []string{"team-a", "team-a-batch", "team-b"} {
		assertReserved(t, e.poolDir(p), nil)
	}
}

// inRange is the result's one address of the example's subnet
// (10.211.0.0/16), which must lie in the pool's range r.
func inRange(t *testing.T, res *current.Result, r string) netip.Prefix {
	t.Helper()
	p := onlyIP(t, res, "10.211.0.0/16")
	if !netip.MustParsePrefix(r).Contains(p.Addr()) {
		t.Fatalf("address %s outside the pool's range %s", p, r)
	}
	return p
}
