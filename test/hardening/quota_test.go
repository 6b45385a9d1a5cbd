package hardening

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// quotaSetup is the chain ipam-delegated → ipam-ds-args → ipam-da-pools
// whose one rule gives the pool a quota per annotation (the conf's own
// pod annotation: every attachment is tenant annotation:team=crash),
// high enough that only exhaustion (100) refuses an ADD.
func quotaSetup(dataDir, network, pool, subnet string) setup {
	return setup{
		name: network, plugin: "ipam-delegated", pool: true, tenant: "annotation:team=crash",
		conf: func(extra string) []byte {
			return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q%s,"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"team":"crash"}},
				"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,
				"rules":[{"pools":[{"name":%q,"subnet":%q}],"quota":{"per":"annotation:team","max":1000}}]}}`,
				network, extra, dataDir, pool, subnet)
		},
		stateOf: func(d string) string { return filepath.Join(d, "_pools", pool) },
	}
}

// tenantRecords lists the addresses s's tenant has records of.
func tenantRecords(t testing.TB, s setup, dataDir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(s.stateOf(dataDir), "_tenants", fmt.Sprintf("%x", s.tenant)))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// checkTenants: whatever a kill -9 interrupted, the tenant's count never
// falls below its reservations (every reservation has its record), and a
// record without one (a process killed between the two writes) is what
// fsck reports and --repair removes; after the repair the count is
// exactly the reservations.
// It returns how many records it had repaired.
func checkTenants(t *testing.T, s setup, dataDir string, state map[string]holder) int {
	t.Helper()
	if s.tenant == "" {
		return 0
	}
	recs := map[string]bool{}
	for _, a := range tenantRecords(t, s, dataDir) {
		recs[a] = true
	}
	for addr := range state {
		if !recs[addr] {
			t.Fatalf("%s: %s is reserved but its tenant has no record of it: the quota under-counts", s.name, addr)
		}
	}
	extra := len(recs) - len(state)
	if extra == 0 {
		return 0
	}
	r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: []string{"fsck", "--data-dir", dataDir, "-o", "json"}})
	var findings []struct{ Severity, Path, Finding string }
	if err := json.Unmarshal(r.Stdout, &findings); err != nil {
		t.Fatalf("fsck: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	flagged := 0
	for _, f := range findings {
		if strings.Contains(f.Path, "_tenants") {
			flagged++
		}
	}
	if flagged != extra {
		t.Fatalf("%s: %d tenant records without a reservation, fsck reports %d:\n%s", s.name, extra, flagged, r.Stdout)
	}
	if r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: []string{"fsck", "--data-dir", dataDir, "--repair"}}); r.Exit > 1 {
		t.Fatalf("fsck --repair: exit %d %s%s", r.Exit, r.Stdout, r.Stderr)
	}
	if got := tenantRecords(t, s, dataDir); len(got) != len(state) {
		t.Fatalf("%s: after fsck --repair the tenant has %d records for %d reservations", s.name, len(got), len(state))
	}
	return extra
}
