package cri

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// stack is one network under its own containerd: the tenants network with
// the file allocator (ipam-da-pools) or with the etcd one (ipam-da-etcd).
// Every case runs on both.
type stack struct {
	name   string
	c      *containerd
	second byte // the network is 10.<second>.0.0/16
	// storeFlags tell `leases` and `gc` where this allocator's state is.
	storeFlags []string
}

// tenantsIPAM is the network's ipam section: ipam-ds-args chooses the pool
// (team-a may pick team-a-batch by annotation; namespace stateful's pods
// keep their addresses by name, namespace vms's by their KubeVirt VM;
// namespace spill's two-address pool overflows into others; namespace
// capped holds at most two addresses),
// allocator allocates from
// 10.<second>.0.0/16. etcd, when set, is the allocator's ipam.etcd.
func tenantsIPAM(allocator string, second byte, etcd string) string {
	pool := func(third int) string { return poolRange(second, third, 0, 255) }
	return chainIPAM(allocator, etcd, `
    {"namespace": "team-a", "pools": ["team-a"], "podChoice": ["team-a", "team-a-batch"]},
    {"namespace": "team-b", "pools": ["team-b"]},
    {"namespace": "stateful", "pools": ["stateful"], "sticky": true},
    {"namespace": "vms", "pools": ["vms"], "sticky": "kubevirt"},
    {"namespace": "spill", "pools": ["spill"]},
    {"namespace": "capped", "pools": ["others"], "quota": {"per": "namespace", "max": 2}}`,
		fmt.Sprintf(`"team-a": %s, "team-a-batch": %s, "team-b": %s, "others": %s, "stateful": %s, "vms": %s, "spill": {"ranges": %s, "overflow": "others"}`,
			pool(10), pool(11), pool(20), pool(40), pool(30), pool(50), poolRange(second, 60, 2, 3)))
}

// poolRange is a pool's range set: 10.<second>.<third>.<first> to
// .<last>, in the network's 10.<second>.0.0/16 with its gateway.
func poolRange(second byte, third, first, last int) string {
	return fmt.Sprintf(`[{"subnet": "10.%[1]d.0.0/16", "rangeStart": "10.%[1]d.%[2]d.%[3]d", "rangeEnd": "10.%[1]d.%[2]d.%[4]d", "gateway": "10.%[1]d.0.1"}]`, second, third, first, last)
}

// chainIPAM is an ipam section ipam-delegated → ipam-ds-args → allocator
// with the given rules and pool definitions, pool others as the default,
// the namespace from containerd's K8S_POD_NAMESPACE as docs/ipam-ds-args.md
// advises; a format string taking the data dir.
func chainIPAM(allocator, etcd, rules, definitions string) string {
	extra := ""
	if etcd != "" {
		extra = `, "etcd": ` + etcd
	}
	return fmt.Sprintf(`{
  "type": "ipam-delegated",
  "delegates": ["ipam-ds-args", %q],
  "namespaceFrom": "kubernetes",
  "rules": [%s
  ],
  "defaultPools": ["others"],
  "poolDefinitions": {%s},
  "routes": [{"dst": "0.0.0.0/0"}],
  "dataDir": %%q%s
}`, allocator, rules, definitions, extra)
}

// forEachStack runs f as a subtest on every stack.
func forEachStack(t *testing.T, f func(t *testing.T, s *stack)) {
	needCRI(t)
	for _, s := range stacks {
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

// in reports whether ip lies in the stack's pool 10.<second>.<third>.0/24.
func (s *stack) in(ip netip.Addr, third byte) bool { return inSubnet(ip, s.second, third) }

// leases is the operator's view of the stack's state: `cniplugins leases`.
func (s *stack) leases(t *testing.T) []lease {
	t.Helper()
	out, stderr, code := s.cli(t, "leases", "-o", "json")
	if code != 0 {
		t.Fatalf("cniplugins leases %s: exit %d: %s", strings.Join(s.storeFlags, " "), code, stderr)
	}
	var ls []lease
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatalf("leases -o json: %v: %s", err, out)
	}
	return ls
}

// gc runs `cniplugins gc --cri` against the stack's runtime, its conf
// dir and its state.
func (s *stack) gc(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return s.cli(t, append([]string{"gc", "--cri", s.c.sock, "--cni-conf-dir", s.c.confDir}, args...)...)
}

// cli runs the installed binary's command with the stack's store flags.
func (s *stack) cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	r := testbin.Run(testbin.Call{Path: s.c.rel.cniBin, Plugin: "cniplugins", Argv: append(args, s.storeFlags...)})
	if r.Exit < 0 {
		t.Fatalf("cniplugins %s: %s", strings.Join(args, " "), r.Stderr)
	}
	return string(r.Stdout), string(r.Stderr), r.Exit
}

// inSubnet reports whether ip lies in 10.<second>.<third>.0/24.
func inSubnet(ip netip.Addr, second, third byte) bool {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, second, third, 0}), 24).Contains(ip)
}
