package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// Tenants that come and go (each a value of the annotation a quota is per,
// which a pod's author chooses) leave their lock files only until fsck
// --repair, `cniplugins gc --apply` or the CNI GC, which remove those of
// tenants no pool counts an address for; fsck reports them. A tenant
// that holds an address keeps its lock file. gc --apply also removes a
// tenant record a killed ADD left, as the CNI GC does.
func TestQuotaTenantLocksDoNotPileUp(t *testing.T) {
	dataDir := t.TempDir()
	conf := quotaConf(dataDir, 3)
	mk := func(cmd, id, team string) testbin.Call {
		c := call("ipam-delegated", cmd, id, []byte(strings.Replace(string(conf), `"capabilities"`,
			`"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"team":"`+team+`"}},"capabilities"`, 1)))
		c.Args = "IgnoreUnknown=1"
		return c
	}
	locks := func() []string {
		t.Helper()
		des, err := os.ReadDir(filepath.Join(dataDir, "_pools", "_index"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, de := range des {
			if strings.HasPrefix(de.Name(), "_tenant-") {
				out = append(out, de.Name())
			}
		}
		return out
	}
	live := "_tenant-" + fmt.Sprintf("%x", "annotation:team=live")
	comeAndGo := func(round string, n int) {
		t.Helper()
		for i := range n {
			id, team := fmt.Sprintf("%s%d", round, i), fmt.Sprintf("%s-%d", round, i)
			testbin.MustSucceed(t, mk("ADD", id, team))
			testbin.MustSucceed(t, mk("DEL", id, team))
		}
		if got := len(locks()); got != n+1 {
			t.Fatalf("%s: %d tenant lock files after %d tenants came and went, one live: want %d", round, got, n, n+1)
		}
	}
	left := func(how string) {
		t.Helper()
		if got := locks(); len(got) != 1 || got[0] != live {
			t.Errorf("after %s: tenant lock files %v, want the live tenant's alone", how, got)
		}
		toks, _ := os.ReadDir(filepath.Join(dataDir, "_pools", "shared", "_tenants", "_tok"))
		if len(toks) != 1 || "_tenant-"+toks[0].Name() != live {
			t.Errorf("after %s: %d tenant tokens in pool shared, want the live tenant's alone", how, len(toks))
		}
	}
	testbin.MustSucceed(t, mk("ADD", "live", "live"))

	comeAndGo("fsck", 40)
	r := cliRun("fsck", "--data-dir", dataDir, "-o", "json")
	var findings []struct{ Severity, Path, Finding, Repair string }
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &findings) != nil {
		t.Fatalf("fsck: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	reported, tokens := 0, 0
	for _, f := range findings {
		if strings.Contains(f.Path, "/_tok/") && f.Severity == "note" && f.Repair != "" {
			tokens++
		}
		if strings.Contains(f.Path, "_tenant-") && f.Severity == "note" && f.Repair != "" {
			reported++
			if strings.HasSuffix(f.Path, live) {
				t.Errorf("fsck reports the live tenant's lock: %+v", f)
			}
		}
	}
	if reported != 40 {
		t.Errorf("fsck reports %d tenant lock files, want the 40 of tenants that are gone:\n%s", reported, r.Stdout)
	}
	if tokens != 40 {
		t.Errorf("fsck reports %d unused tenant tokens, want 40:\n%s", tokens, r.Stdout)
	}
	if r := cliRun("fsck", "--data-dir", dataDir, "--repair"); r.Exit != 0 {
		t.Fatalf("fsck --repair: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	left("fsck --repair")

	comeAndGo("gc", 10)
	// And a record a killed ADD left: it counts, for the live tenant, an
	// address that is not reserved. gc --apply repairs it as the CNI GC
	// does (one code path), and fsck finds nothing left to report.
	stale := filepath.Join(dataDir, "_pools", "shared", "_tenants", "_addr", "10.234.9.250")
	if err := os.Link(filepath.Join(dataDir, "_pools", "shared", "_tenants", "_tok", strings.TrimPrefix(live, "_tenant-")), stale); err != nil {
		t.Fatal(err)
	}
	if r := cliRun("fsck", "--data-dir", dataDir); r.Exit != 1 || !strings.Contains(string(r.Stdout), "10.234.9.250") {
		t.Fatalf("fsck of the stale tenant record: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := cliRun("gc", "--data-dir", dataDir, "--pool", "shared", "--keep", "live", "--apply"); r.Exit != 0 {
		t.Fatalf("gc --apply: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	left("cniplugins gc --apply")
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("after gc --apply the stale tenant record is still there (%v)", err)
	}
	if r := cliRun("fsck", "--data-dir", dataDir, "-o", "json"); r.Exit != 0 || strings.TrimSpace(string(r.Stdout)) != "[]" {
		t.Errorf("fsck after gc --apply: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}

	comeAndGo("cni", 10)
	gc := call("ipam-delegated", "GC", "", []byte(strings.Replace(string(conf), `"name":"quota",`,
		`"name":"quota","cni.dev/valid-attachments":[{"containerID":"live","ifname":"eth0"}],`, 1)))
	gc.ContainerID, gc.IfName, gc.Netns = "", "", ""
	testbin.MustSucceed(t, gc)
	left("the CNI GC")

	// The live tenant is still counted, under a lock that works.
	testbin.MustSucceed(t, mk("ADD", "live2", "live"))
	if e := testbin.Run(mk("ADD", "live3", "live")).Err(); e == nil || e.Code != 106 {
		t.Errorf("the live tenant's third ADD: %+v, want 106", e)
	}
}
