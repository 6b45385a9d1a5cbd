package hardening

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// withAnnotations is the top-level key a CRI runtime adds for a plugin
// with the io.kubernetes.cri.pod-annotations capability.
func withAnnotations(annotations map[string]string) string {
	b, _ := json.Marshal(map[string]any{"io.kubernetes.cri.pod-annotations": annotations})
	return `,"runtimeConfig":` + string(b)
}

// argsStickySetup is ipam-delegated → ipam-ds-args → ipam-da-pools whose
// one rule, sticky as sticky says (true, "kubevirt"), selects pool p.
func argsStickySetup(dataDir, network, p, subnet, sticky string) setup {
	return setup{
		name: network, plugin: "ipam-delegated", pool: true,
		conf: func(extra string) []byte {
			return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q%s,"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,"rules":[{"pools":[%q],"sticky":%s}],"poolDefinitions":{%q:[{"subnet":%q}]}}}`,
				network, extra, dataDir, p, sticky, p, subnet)
		},
		stateOf: func(d string) string { return filepath.Join(d, "_pools", p) },
	}
}

// A migration name shares an address for a VM's key alone: pg-0 holds
// its address live; a second pod of the namespace presenting the same key
// (another pod's annotation or arg, which any author may write) and a
// kubevirt.io/migrationJobName is refused with 105, as without the
// annotation, and the owner's state stays as it was. A VM's pods, keyed
// by "kubevirt" (the allocator's own, or a selector's rule), still share
// it during a live migration.
func TestMigrationNameOnlyForVMKeys(t *testing.T) {
	dataDir := t.TempDir()
	mig := map[string]string{alloc.AnnotationMigrationJob: "mig-1"}
	with := func(a, b map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range []map[string]string{a, b} {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	for i, tt := range []struct {
		name        string
		s           setup
		args        string // CNI_ARGS; %s is the pod's name
		annotations map[string]string
		share       bool // the target shares the owner's address
	}{
		{name: "the allocator's annotation key", s: standaloneSetup(dataDir, "mig-annotation", "10.211.70.0/24", `,"sticky":{"by":["annotation"]}`),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=%s", annotations: map[string]string{alloc.AnnotationStickyKey: "pg-0"}},
		{name: "the allocator's annotation key shaped like a VM's", s: standaloneSetup(dataDir, "mig-vmshape", "10.211.71.0/24", `,"sticky":{"by":["annotation","kubevirt"]}`),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=%s", annotations: map[string]string{alloc.AnnotationStickyKey: "vm/pg"}},
		{name: "the allocator's pod key", s: standaloneSetup(dataDir, "mig-pod", "10.211.72.0/24", `,"sticky":{"by":["pod"]}`),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=pg-0;K8S_POD_UID=%s"},
		{name: "the allocator's arg key", s: standaloneSetup(dataDir, "mig-arg", "10.211.73.0/24", `,"sticky":{"by":["arg"]}`),
			args: "IgnoreUnknown=true;CNIPLUGINS_STICKY_KEY=pg-0;NOMAD_NAMESPACE=db;NOMAD_ALLOC_ID=%s"},
		{name: "a selector's annotation key", s: argsStickySetup(dataDir, "mig-sel-annotation", "sel-a", "10.211.74.0/24", "true"),
			args: "IgnoreUnknown=1;K8S_POD_NAME=%s", annotations: map[string]string{alloc.AnnotationStickyKey: "vms/vm/pg"}},
		{name: "a selector's pod key", s: argsStickySetup(dataDir, "mig-sel-pod", "sel-p", "10.211.75.0/24", "true"),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=pg-0;K8S_POD_UID=%s"},

		{name: "the allocator's VM key", s: standaloneSetup(dataDir, "mig-kubevirt", "10.211.76.0/24", `,"sticky":{"by":["kubevirt"]}`),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-%s", annotations: map[string]string{alloc.AnnotationKubevirtDomain: "pg"}, share: true},
		{name: "a selector's VM key", s: argsStickySetup(dataDir, "mig-sel-kubevirt", "sel-k", "10.211.77.0/24", `"kubevirt"`),
			args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=vms;K8S_POD_NAME=virt-launcher-%s", annotations: map[string]string{alloc.AnnotationKubevirtDomain: "pg"}, share: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owner := call(tt.s.plugin, "ADD", fmt.Sprintf("owner-%d", i), tt.s.conf(withAnnotations(tt.annotations)))
			owner.Args = fmt.Sprintf(tt.args, "a1")
			addr := firstAddr(t, testbin.MustSucceed(t, owner).Stdout)
			before := snapshot(t, tt.s.stateOf(dataDir))

			second := call(tt.s.plugin, "ADD", fmt.Sprintf("second-%d", i), tt.s.conf(withAnnotations(with(tt.annotations, mig))))
			second.Args = fmt.Sprintf(tt.args, "b2")
			r := testbin.Run(second)
			if tt.share {
				if r.Exit != 0 || firstAddr(t, r.Stdout) != addr {
					t.Fatalf("migration target: exit %d %s; want the VM's %s", r.Exit, r.Stdout, addr)
				}
				return
			}
			if e := r.Err(); e == nil || e.Code != 105 {
				t.Fatalf("second live pod with a migration name: exit %d %s; want 105 (the owner has %s)", r.Exit, r.Stdout, addr)
			}
			if d := diff(before, snapshot(t, tt.s.stateOf(dataDir)), ""); len(d) != 0 {
				t.Errorf("the owner's state changed: %v", d)
			}
		})
	}
}

// The allocator's own key sources read the namespace as a selector does:
// prod/pg-0 holds an address in a standalone ipam-da-pools (and behind
// ipam-ds-static) with sticky.by ["pod"]; a Nomad job in dev posing as
// prod (K8S_POD_NAMESPACE=prod in its own args, NOMAD_NAMESPACE=dev after
// them), or CNI_ARGS with the namespace twice, is code 7 naming both, and
// the pool stays as it was. ipam.namespaceFrom names the runtime there
// too: with "nomad", a job's K8S_POD_NAMESPACE is refused and its pod name
// keys a hold in its own namespace; a misspelt value is code 7.
func TestAllocatorNamespace(t *testing.T) {
	for _, s := range []func(dataDir, from string) setup{
		func(dataDir, from string) setup {
			return standaloneSetup(dataDir, "ns-standalone", "10.211.80.0/24", `,"sticky":{"by":["pod"]}`+from)
		},
		func(dataDir, from string) setup {
			return chainSetup(dataDir, "ns-static", "pods", "10.211.81.0/24", `,"sticky":{"by":["pod"]}`+from)
		},
	} {
		dataDir := t.TempDir()
		plain := s(dataDir, "")
		t.Run(plain.name, func(t *testing.T) {
			owner := call(plain.plugin, "ADD", "prod-pg-0", plain.conf(""))
			owner.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;K8S_POD_UID=1"
			held := firstAddr(t, testbin.MustSucceed(t, owner).Stdout)
			del := owner
			del.Command = "DEL"
			testbin.MustSucceed(t, del)
			before := snapshot(t, plain.stateOf(dataDir))

			for _, tt := range []struct {
				name, from, args string
				names            []string
			}{
				{name: "a Nomad job posing as prod", args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev;NOMAD_JOB_ID=x",
					names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
				{name: "the namespace twice", args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=dev;K8S_POD_NAME=pg-0;K8S_POD_NAMESPACE=prod",
					names: []string{`K8S_POD_NAMESPACE="dev"`, `K8S_POD_NAMESPACE="prod"`}},
				{name: "namespaceFrom nomad, a job's K8S_POD_NAMESPACE", from: `,"namespaceFrom":"nomad"`, args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev",
					names: []string{`K8S_POD_NAMESPACE="prod"`, `NOMAD_NAMESPACE="dev"`}},
				{name: "namespaceFrom nomad, a job without Nomad's namespace", from: `,"namespaceFrom":"nomad"`, args: "IgnoreUnknown=true;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0",
					names: []string{`K8S_POD_NAMESPACE="prod"`, "ipam.namespaceFrom nomad"}},
				{name: "namespaceFrom misspelt", from: `,"namespaceFrom":"k8s"`, args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=pg-0",
					names: []string{"ipam.namespaceFrom", "k8s"}},
			} {
				t.Run(tt.name, func(t *testing.T) {
					c := call(plain.plugin, "ADD", "spoof", s(dataDir, tt.from).conf(""))
					c.Args = tt.args
					refusedNaming(t, testbin.Run(c), "prod/pg-0", held, tt.names)
					if d := diff(before, snapshot(t, plain.stateOf(dataDir)), ""); len(d) != 0 {
						t.Errorf("the pool changed: %v", d)
					}
				})
			}

			// namespaceFrom nomad: the job's pod name keys dev/pg-0, which
			// holds nothing yet, and then holds an address of its own.
			job := call(plain.plugin, "ADD", "dev-job", s(dataDir, `,"namespaceFrom":"nomad"`).conf(""))
			job.Args = "IgnoreUnknown=true;K8S_POD_NAME=pg-0;NOMAD_NAMESPACE=dev"
			got := firstAddr(t, testbin.MustSucceed(t, job).Stdout)
			if got == held {
				t.Fatalf("dev's job got prod/pg-0's %s", held)
			}
			job.Command = "DEL"
			testbin.MustSucceed(t, job)
			job.Command, job.ContainerID = "ADD", "dev-job-2"
			if again := firstAddr(t, testbin.MustSucceed(t, job).Stdout); again != got {
				t.Errorf("dev/pg-0 again got %s, want its held %s", again, got)
			}
		})
	}
}

// refusedNaming asserts that r, a spoofing ADD, was refused with code 7
// naming each of names, while key held address held.
func refusedNaming(t *testing.T, r testbin.Reply, key, held string, names []string) {
	t.Helper()
	e := r.Err()
	if e == nil || e.Code != 7 {
		t.Fatalf("ADD: exit %d %s; want code 7 (the address held for %s is %s)", r.Exit, r.Stdout, key, held)
	}
	for _, n := range names {
		if !strings.Contains(e.Msg+" "+e.Details, n) {
			t.Errorf("%s / %s does not name %s", e.Msg, e.Details, n)
		}
	}
}
