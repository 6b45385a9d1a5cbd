package hardening

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// overflowSetup is quotaSetup's chain whose pool, head (a /29: five
// addresses), overflows into spill, so that concurrent ADDs spill, take
// the head again as DELs free it, and race on both.
func overflowSetup(dataDir, network, head, headSubnet, spill, spillSubnet string) setup {
	return setup{
		name: network, plugin: "ipam-delegated", pool: true, tenant: "annotation:team=crash",
		conf: func(extra string) []byte {
			return fmt.Appendf(nil, `{"cniVersion":"1.1.0","name":%q%s,"runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"team":"crash"}},
				"ipam":{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"dataDir":%q,
				"rules":[{"pools":[{"name":%q,"subnet":%q,"overflow":%q}],"quota":{"per":"annotation:team","max":1000}}],
				"poolDefinitions":{%q:[{"subnet":%q}]}}}`,
				network, extra, dataDir, head, headSubnet, spill, spill, spillSubnet)
		},
		stateOf:    func(d string) string { return filepath.Join(d, "_pools", head) },
		overflowOf: func(d string) string { return filepath.Join(d, "_pools", spill) },
	}
}

// spillRecords lists the spill records of state directory dir.
func spillRecords(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "_spill"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// tenantRecords lists the addresses tenant has records of in state
// directory dir (names in _tenants/_addr linked to its token), and the
// count the plugin reads: the token's link count less one.
func tenantRecords(t testing.TB, dir, tenant string) (addrs []string, count int) {
	t.Helper()
	dir = filepath.Join(dir, "_tenants")
	token, err := os.Lstat(filepath.Join(dir, "_tok", fmt.Sprintf("%x", tenant)))
	if os.IsNotExist(err) {
		return nil, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(filepath.Join(dir, "_addr"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(fi, token) {
			addrs = append(addrs, de.Name())
		}
	}
	return addrs, int(token.Sys().(*syscall.Stat_t).Nlink) - 1
}

// checkTenants: whatever a kill -9 interrupted, the tenant's count never
// falls below its reservations (every reservation has its record); a
// record without one (a process killed between the two writes) is what
// fsck reports, and the next operation on the pool, whatever it is (here
// a DEL of an unknown attachment), finds the index stale and removes it:
// after that the count is exactly the reservations. It returns how many
// records that operation removed.
func checkTenants(t *testing.T, s setup, dir string, state map[string]holder, nextOp func()) int {
	t.Helper()
	if s.tenant == "" {
		nextOp()
		return 0
	}
	dataDir := filepath.Dir(filepath.Dir(dir))
	addrs, count := tenantRecords(t, dir, s.tenant)
	recs := map[string]bool{}
	for _, a := range addrs {
		recs[a] = true
	}
	for addr := range state {
		if !recs[addr] {
			t.Fatalf("%s: %s is reserved but its tenant has no record of it: the quota under-counts", s.name, addr)
		}
	}
	if count != len(addrs) {
		t.Fatalf("%s: the tenant's token counts %d addresses, its records are %v", s.name, count, addrs)
	}
	extra := len(recs) - len(state)
	if extra > 0 {
		r := testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: []string{"fsck", "--data-dir", dataDir, "-o", "json"}})
		var findings []struct{ Severity, Path, Finding string }
		if err := json.Unmarshal(r.Stdout, &findings); err != nil {
			t.Fatalf("fsck: %v\n%s%s", err, r.Stdout, r.Stderr)
		}
		flagged := 0
		for _, f := range findings {
			if strings.HasPrefix(f.Path, filepath.Join(dir, "_tenants")) {
				flagged++
			}
		}
		if flagged != extra {
			t.Fatalf("%s: %d tenant records without a reservation, fsck reports %d:\n%s", s.name, extra, flagged, r.Stdout)
		}
	}
	nextOp()
	if got, count := tenantRecords(t, dir, s.tenant); len(got) != len(state) || count != len(state) {
		t.Fatalf("%s: after the next operation the tenant has records %v (count %d) for %d reservations", s.name, got, count, len(state))
	}
	return extra
}
