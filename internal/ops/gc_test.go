package ops

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/dapools"
	"github.com/cniplugins/cniplugins/internal/hostlocal"
	"github.com/cniplugins/cniplugins/internal/pool"
)

// `cniplugins gc --apply` and the CNI GC are one code path
// (dapools.Collect): from the same state, with a tenant record a killed
// ADD left (its address not reserved), a dead tenant's reservation and
// the lock file of a tenant that is gone, both release the same address,
// remove the stale record, the tokens and the lock files no address
// needs, and leave nothing fsck reports.
func TestGCRepairsTenantRecords(t *testing.T) {
	live := alloc.Attachment{ContainerID: "live", IfName: "eth0", Network: "net"}
	for _, tt := range []struct {
		name string
		gc   func(dataDir string) ([]string, error)
	}{
		{"cniplugins gc --apply", func(dataDir string) ([]string, error) {
			ls, err := Local{DataDir: dataDir}.GC(GCRequest{Location: Location{Pool: "p"}, Keep: []alloc.Attachment{live.Key()}, Apply: true})
			var out []string
			for _, l := range ls {
				out = append(out, l.Address)
			}
			return out, err
		}},
		{"the CNI GC", func(dataDir string) ([]string, error) {
			p := alloc.Scope{Pool: "p"}
			freed, _, err := dapools.Collect(dapools.Collection{Place: dapools.Place{DataDir: dataDir}, Scopes: []alloc.Scope{p},
				Keep: alloc.NewKeepSet("net", []alloc.Attachment{live.Key()}).Keeps, Now: time.Now()})
			var out []string
			for _, ip := range freed {
				out = append(out, ip.String())
			}
			return out, err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			dir := plantTenants(t, dataDir, live)
			released, err := tt.gc(dataDir)
			if err != nil || !slices.Equal(released, []string{"10.0.0.3"}) {
				t.Fatalf("released %v, %v; want the dead tenant's 10.0.0.3", released, err)
			}
			names := func(p string) []string {
				des, _ := os.ReadDir(p)
				var out []string
				for _, de := range des {
					out = append(out, de.Name())
				}
				return out
			}
			if got := names(filepath.Join(dir, "_tenants", "_addr")); !slices.Equal(got, []string{"10.0.0.2"}) {
				t.Errorf("tenant records %v, want live's 10.0.0.2 alone", got)
			}
			if got := names(filepath.Join(dir, "_tenants", "_tok")); !slices.Equal(got, []string{pool.TenantName("namespace=a")}) {
				t.Errorf("tenant tokens %v, want namespace=a's alone", got)
			}
			if n, err := hostlocal.TenantAddrsUnlocked(dir, "namespace=a", os.Geteuid()); n != 1 || err != nil {
				t.Errorf("namespace=a counts %d, %v; want its one address", n, err)
			}
			if got := names(filepath.Join(dataDir, "_pools", "_index")); slices.ContainsFunc(got, func(n string) bool {
				return n != "p" && n != "_tenant-"+pool.TenantName("namespace=a")
			}) {
				t.Errorf("pools' index holds %v, want the live tenant's lock file alone", got)
			}
			if fs, err := Fsck(FsckRequest{DataDir: dataDir}); len(fs) != 0 || err != nil {
				t.Errorf("fsck after GC: %+v, %v", fs, err)
			}
		})
	}
}

// plantTenants makes pool p under dataDir: live has 10.0.0.2 for tenant
// namespace=a, a dead container 10.0.0.3 for namespace=b, a killed ADD's
// record counts 10.0.0.5 (not reserved) for namespace=a, and tenants a,
// b and gone have lock files. It returns the pool's directory.
func plantTenants(t *testing.T, dataDir string, live alloc.Attachment) string {
	t.Helper()
	dir := dapools.ScopeDir(dataDir, alloc.Scope{Pool: "p"})
	d, err := hostlocal.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	dead := alloc.Attachment{ContainerID: "dead", IfName: "eth0", Network: "net"}
	for _, r := range []struct {
		a      alloc.Attachment
		tenant string
		ip     string
	}{{live, "namespace=a", "10.0.0.2"}, {dead, "namespace=b", "10.0.0.3"}} {
		d.ForTenant(r.tenant)
		if ok, err := d.Reserve(r.a, netip.MustParseAddr(r.ip)); !ok || err != nil {
			t.Fatalf("reserve %s: %v %v", r.ip, ok, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "_tenants", "_tok", pool.TenantName("namespace=a"))
	if toks, _ := os.ReadDir(filepath.Dir(tok)); len(toks) != 2 {
		t.Fatalf("%d tenant tokens, want namespace=a's and namespace=b's", len(toks))
	}
	if err := os.Link(tok, filepath.Join(dir, "_tenants", "_addr", "10.0.0.5")); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"namespace=a", "namespace=b", "gone"} {
		lk, err := hostlocal.LockTenant(dapools.PoolsDir(dataDir), tenant, os.Geteuid(), time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		lk.Close()
	}
	if fs, _ := Fsck(FsckRequest{DataDir: dataDir}); len(fs) < 2 {
		t.Fatalf("fsck before GC finds %+v; want the stale record and the idle lock", fs)
	}
	return dir
}

// fsck with the configuration reports a reservation outside every range
// set the configuration gives its directory, naming it as leases would,
// and never repairs it: a reservation is never deleted.
func TestFsckReservationOutsideRanges(t *testing.T) {
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "net")
	d, err := hostlocal.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.0.0.2", "10.9.9.9"} {
		if _, err := d.Reserve(alloc.Attachment{ContainerID: "c" + ip, IfName: "eth0"}, netip.MustParseAddr(ip)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	nets := []Network{{Conf: PluginConf{Network: "net"}, Dir: dir, RangeSets: []addrspace.RangeSet{rangeSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/29"})}}}
	fs, err := Fsck(FsckRequest{DataDir: dataDir, Networks: nets, Repair: true, LockTimeout: time.Second})
	if err != nil || len(fs) != 1 || Unrepaired(fs) != 1 {
		t.Fatalf("fsck: %+v, %v; want one unrepaired problem", fs, err)
	}
	want := Finding{Dir: "net", Severity: SeverityProblem, Path: filepath.Join(dir, "10.9.9.9"),
		What: "reservation 10.9.9.9 (network net, container c10.9.9.9 ifname eth0, owner cni) is outside every configured range"}
	if fs[0] != want {
		t.Errorf("fsck: %+v; want %+v", fs[0], want)
	}
}
