package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// TestStickyKeyScopedToNamespace: an author-chosen key (the annotation,
// CNIPLUGINS_STICKY_KEY) holds within the namespace the runtime passed. A
// pod in b presenting a's key gets its own, empty key, never a's held
// address; a's pods get it back; leases and release --sticky-key show and
// take the scoped form; a key without a namespace holds as written.
func TestStickyKeyScopedToNamespace(t *testing.T) {
	n := stickyNet{t.TempDir(), "0"}
	annotated := func(cmd, id, ns, key string) testbin.Call {
		conf := n.conf(fmt.Sprintf(`,"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"cniplugins.io/sticky-key":%q}}`, key))
		conf = []byte(strings.Replace(string(conf), `"by":["pod","arg"]`, `"by":["annotation","arg"]`, 1))
		c := call("ipam-da-pools", cmd, id, conf)
		c.Args = "K8S_POD_NAMESPACE=" + ns + ";K8S_POD_NAME=" + id
		return c
	}
	addr := func(c testbin.Call) string {
		t.Helper()
		return strings.TrimSuffix(parseResult(t, testbin.MustSucceed(t, c).Stdout).IPs[0].Address, "/28")
	}
	held := addr(annotated("ADD", "a-1", "a", "vm-1"))
	testbin.MustSucceed(t, annotated("DEL", "a-1", "a", "vm-1"))

	// b presents a's key as written, and in a's scoped form: its own keys.
	for i, key := range []string{"vm-1", "a/vm-1"} {
		id := fmt.Sprint("b-", i)
		got := addr(annotated("ADD", id, "b", key))
		if got == held {
			t.Fatalf("pod in b presenting %q got a's held address %s", key, got)
		}
		testbin.MustSucceed(t, annotated("DEL", id, "b", key))
		if got2 := addr(annotated("ADD", id+"-again", "b", key)); got2 != got {
			t.Errorf("b's own key %q: %s, then %s", key, got, got2)
		}
		testbin.MustSucceed(t, annotated("DEL", id+"-again", "b", key))
	}
	// The arg source is scoped alike.
	c := call("ipam-da-pools", "ADD", "b-arg", n.conf(""))
	c.Args = "K8S_POD_NAMESPACE=b;CNIPLUGINS_STICKY_KEY=a/vm-1"
	if got := addr(c); got == held {
		t.Fatalf("CNIPLUGINS_STICKY_KEY from b got a's held address")
	}
	// a's pods get it back, with the key as written or already scoped.
	if got := addr(annotated("ADD", "a-2", "a", "vm-1")); got != held {
		t.Errorf("a's pod got %s, want its held %s", got, held)
	}
	testbin.MustSucceed(t, annotated("DEL", "a-2", "a", "vm-1"))
	if got := addr(annotated("ADD", "a-3", "a", "a/vm-1")); got != held {
		t.Errorf("a's pod presenting the scoped form got %s, want %s", got, held)
	}
	testbin.MustSucceed(t, annotated("DEL", "a-3", "a", "vm-1"))

	// leases shows the scoped form; release --sticky-key takes it.
	r := cliRun("leases", "--data-dir", n.dataDir, "-o", "json")
	var leases []map[string]any
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &leases) != nil {
		t.Fatalf("leases: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	keys := map[string]string{}
	for _, l := range leases {
		if k, _ := l["stickyKey"].(string); k != "" {
			keys[k] = l["address"].(string)
		}
	}
	for _, k := range []string{"a/vm-1", "b/vm-1", "b/a/vm-1"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("leases has no key %q: %v", k, keys)
		}
	}
	if keys["a/vm-1"] != held {
		t.Errorf("a/vm-1 holds %s, want %s", keys["a/vm-1"], held)
	}
	if r := cliRun("release", "--sticky-key", "a/vm-1", "--network", "sticky", "--data-dir", n.dataDir); r.Exit != 0 || !strings.Contains(string(r.Stdout), "released "+held) {
		t.Errorf("release --sticky-key a/vm-1: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}

	// Without a namespace (podman) the key holds as written.
	c = call("ipam-da-pools", "ADD", "podman-1", n.conf(""))
	c.Args = "CNIPLUGINS_STICKY_KEY=vm-1"
	plain := addr(c)
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "podman-1", n.conf("")))
	c.ContainerID = "podman-2"
	if got := addr(c); got != plain {
		t.Errorf("unscoped key: %s, then %s", plain, got)
	}
	if r := cliRun("leases", "--data-dir", n.dataDir); !strings.Contains(string(r.Stdout), `"vm-1"`) {
		t.Errorf("leases lacks the unscoped key vm-1:\n%s", r.Stdout)
	}
}
