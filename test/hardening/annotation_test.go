package hardening

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// tenantConf is ipam-delegated → ipam-ds-args → ipam-da-pools where
// namespace tenant-a may pick pool fast by annotation, with annotations
// (a runtimeConfig capability, as containerd passes them) when non-nil.
func tenantConf(dataDir string, annotations map[string]string) []byte {
	conf := map[string]any{"cniVersion": "1.1.0", "name": "tenants", "ipam": map[string]any{
		"type": "ipam-delegated", "delegates": []string{"ipam-ds-args", "ipam-da-pools"}, "dataDir": dataDir,
		"rules": []any{map[string]any{"namespace": "tenant-a", "pools": []string{"a"}, "podChoice": []string{"a", "fast"}}},
		"poolDefinitions": map[string]any{
			"a":    []any{map[string]string{"subnet": "10.211.30.0/24"}},
			"fast": []any{map[string]string{"subnet": "10.211.31.0/24"}},
		},
	}}
	if annotations != nil {
		conf["runtimeConfig"] = map[string]any{"io.kubernetes.cri.pod-annotations": annotations}
	}
	b, _ := json.Marshal(conf)
	return b
}

// hugePools is a cniplugins.io/pools annotation of size bytes naming
// distinct pools (Kubernetes allows 256 KiB of annotations per pod).
func hugePools(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size-16; i++ {
		fmt.Fprintf(&b, "p%05d,", i)
	}
	return b.String() + "fast"
}

// A pod's author writes its annotations: 256 KiB of pool names is refused
// (code 7 naming the annotation) after reading the first entry too many,
// and DEL with it frees the pod's address as always. How little CPU both
// take is BenchmarkHostileAnnotation's.
func TestHugePoolsAnnotation(t *testing.T) {
	dataDir := t.TempDir()
	huge := map[string]string{"cniplugins.io/pools": hugePools(256 << 10)}
	add := call("ipam-delegated", "ADD", "huge", tenantConf(dataDir, huge))
	add.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=p-0"
	r := testbin.Run(add)
	if e := r.Err(); e == nil || e.Code != 7 || !strings.Contains(e.Msg+e.Details, `["cniplugins.io/pools"]`) || !strings.Contains(e.Msg+e.Details, "more than 64") {
		t.Fatalf("ADD with a 256 KiB cniplugins.io/pools: %+v, want code 7 naming the annotation and the bound", e)
	}
	if len(r.Stdout) > 4096 {
		t.Errorf("the error echoes the annotation: %d bytes", len(r.Stdout))
	}
	// The pod's address, taken without the annotation, is freed by a DEL
	// that carries it.
	add.ContainerID = "huge2"
	add.Stdin = tenantConf(dataDir, nil)
	testbin.MustSucceed(t, add)
	del := add
	del.Command, del.Stdin = "DEL", tenantConf(dataDir, huge)
	testbin.MustSucceed(t, del)
	if got := readState(t, dataDir+"/_pools/a", true); len(got) != 0 {
		t.Errorf("DEL with the annotation left %v", got)
	}
	// 20,000 annotation keys that match no rule: code 103 names a few.
	many := map[string]string{}
	for i := range 20000 {
		many[fmt.Sprintf("k%05d", i)] = ""
	}
	other := call("ipam-delegated", "ADD", "many", tenantConf(dataDir, many))
	other.Args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-z;K8S_POD_NAME=p-0"
	r = testbin.Run(other)
	if e := r.Err(); e == nil || e.Code != 103 || !strings.Contains(e.Details, "(19968 more)") || len(r.Stdout) > 4096 {
		t.Errorf("ADD with 20,000 annotations matching no rule: %d bytes %.300s; want 103 naming 32 keys", len(r.Stdout), r.Stdout)
	}
}

// BenchmarkHostileAnnotation is the CPU (user + system, from the exec'd
// process tree's rusage) of one ADD and one DEL of the installed chain
// with a 256 KiB cniplugins.io/pools annotation, and of ipam-ds-args with
// 64 KiB of distinct unknown CNI_ARGS keys: each must stay well under
// 100 ms. Run: go test ./test/hardening -run '^$' -bench HostileAnnotation
func BenchmarkHostileAnnotation(b *testing.B) {
	dataDir := b.TempDir()
	huge := tenantConf(dataDir, map[string]string{"cniplugins.io/pools": hugePools(256 << 10)})
	k8s := "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=p-0"
	var keys strings.Builder
	keys.WriteString("IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a")
	for i := 0; keys.Len() < 64<<10-16; i++ {
		fmt.Fprintf(&keys, ";k%d=", i)
	}
	for _, bc := range []struct {
		name, plugin, cmd, args string
		stdin                   []byte
	}{
		{"ADD 256KiB annotation", "ipam-delegated", "ADD", k8s, huge},
		{"DEL 256KiB annotation", "ipam-delegated", "DEL", k8s, huge},
		{"ADD 64KiB CNI_ARGS", "ipam-ds-args", "ADD", keys.String(), tenantConf(dataDir, nil)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var cpu float64
			for i := 0; i < b.N; i++ {
				c := call(bc.plugin, bc.cmd, fmt.Sprint("bench", i), bc.stdin)
				c.Args = bc.args
				p := startCall(b, c)
				p.wait(b)
				st := p.cmd.ProcessState
				cpu += float64((st.UserTime() + st.SystemTime()).Microseconds()) / 1000
			}
			b.ReportMetric(cpu/float64(b.N), "cpu-ms/op")
		})
	}
}
