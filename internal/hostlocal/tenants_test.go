package hostlocal

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// reserveFor reserves ip for attachment id as tenant's in dir, in one
// operation.
func reserveFor(t *testing.T, dir, tenant, id string, ip netip.Addr) {
	t.Helper()
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d.ForTenant(tenant)
	if ok, err := d.Reserve(Attachment{ContainerID: id, IfName: "eth0"}, ip); !ok || err != nil {
		t.Fatalf("reserve %s: %v %v", ip, ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// counts opens dir as the next operation would and returns each tenant's
// count.
func counts(t *testing.T, dir string, tenants ...string) []int {
	t.Helper()
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := make([]int, len(tenants))
	for i, tn := range tenants {
		if out[i], err = d.TenantAddrs(tn); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// killed is a process killed holding d: the lock goes, nothing else.
func killed(t *testing.T, d *Disk) {
	t.Helper()
	if err := d.lock.Close(); err != nil {
		t.Fatal(err)
	}
}

// A tenant's count is its token's link count: reserve, release and GC
// move it, other tenants' records never.
func TestTenantCount(t *testing.T) {
	dir := t.TempDir()
	for i := 1; i <= 5; i++ {
		reserveFor(t, dir, "ns=a", fmt.Sprint("a", i), netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}))
	}
	reserveFor(t, dir, "ns=b", "b1", netip.MustParseAddr("10.0.0.9"))
	if got := counts(t, dir, "ns=a", "ns=b", "ns=c"); got[0] != 5 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("counts a, b, c = %v, want 5 1 0", got)
	}
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Release(Attachment{ContainerID: "a2", IfName: "eth0"}, netip.MustParseAddr("10.0.0.2")); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	d.Close()
	if got := counts(t, dir, "ns=a", "ns=b"); got[0] != 4 || got[1] != 1 {
		t.Fatalf("after a release, counts a, b = %v, want 4 1", got)
	}
	tenants, err := ReadTenants(dir, []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.9")})
	if err != nil || tenants[netip.MustParseAddr("10.0.0.1")] != "ns=a" || tenants[netip.MustParseAddr("10.0.0.9")] != "ns=b" || len(tenants) != 2 {
		t.Fatalf("ReadTenants = %v %v", tenants, err)
	}
}

// Whatever point a kill -9 interrupts, the next operation counts exactly
// the tenant's reservations: the index is stale, and its rebuild removes
// the records that count nothing.
func TestTenantCountAfterKill(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.7")
	a := Attachment{ContainerID: "k", IfName: "eth0"}
	for _, tc := range []struct {
		name string
		kill func(t *testing.T, dir string)
		want int
	}{
		{"ADD killed after the record, before the reservation", func(t *testing.T, dir string) {
			d, err := Open(dir, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			d.ForTenant("ns=a")
			if err := d.tag(ip); err != nil {
				t.Fatal(err)
			}
			killed(t, d)
		}, 1},
		{"ADD killed after the reservation", func(t *testing.T, dir string) {
			d, err := Open(dir, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			d.ForTenant("ns=a")
			if ok, err := d.Reserve(a, ip); !ok || err != nil {
				t.Fatal(ok, err)
			}
			killed(t, d)
		}, 2},
		{"DEL killed after the release, before the record goes", func(t *testing.T, dir string) {
			reserveFor(t, dir, "ns=a", "k", ip)
			d, err := Open(dir, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			path, _ := d.addrPath(ip)
			if err := os.Rename(path, d.scratch()); err != nil { // Release's first step
				t.Fatal(err)
			}
			killed(t, d)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			reserveFor(t, dir, "ns=a", "other", netip.MustParseAddr("10.0.0.1"))
			tc.kill(t, dir)
			if got := counts(t, dir, "ns=a")[0]; got != tc.want {
				t.Fatalf("the next operation counts %d, want %d", got, tc.want)
			}
			recs, err := os.ReadDir(newStateDir(dir).recordsDir())
			if err != nil || len(recs) != tc.want {
				t.Fatalf("records after the next operation: %d (%v), want %d", len(recs), err, tc.want)
			}
		})
	}
}

// Past a token's link limit the records link a next token, and the count
// adds them up; GC drops the tokens no address needs, from the chain's
// end only.
func TestTenantTokenChain(t *testing.T) {
	dir := t.TempDir()
	const limit = 3 // links per token, the record count being limit-1
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	d.linkToken = func(token, rec string) error {
		if fi, err := os.Lstat(token); err == nil && fi.Sys().(*syscall.Stat_t).Nlink >= limit {
			return &os.LinkError{Op: "link", Old: token, New: rec, Err: syscall.EMLINK}
		}
		return os.Link(token, rec)
	}
	d.ForTenant("ns=a")
	for i := 1; i <= 5; i++ {
		if ok, err := d.Reserve(Attachment{ContainerID: fmt.Sprint("c", i), IfName: "eth0"}, netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if n, err := d.TenantAddrs("ns=a"); n != 5 || err != nil {
		t.Fatalf("count over a chain of tokens = %d %v, want 5", n, err)
	}
	name := fmt.Sprintf("%x", "ns=a")
	for k, want := range []uint64{3, 3, 2} {
		fi, err := os.Lstat(d.tokenPath(name, k))
		if err != nil || fi.Sys().(*syscall.Stat_t).Nlink != want {
			t.Fatalf("token %d: %v, want %d links", k, err, want)
		}
	}
	// Free the first token's addresses and the last's: GC keeps the
	// first (a later token still counts) and drops the last.
	for _, i := range []int{1, 2, 5} {
		if ok, err := d.Release(Attachment{ContainerID: fmt.Sprint("c", i), IfName: "eth0"}, netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	done, err := d.RepairTenants()
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || !strings.Contains(done[0], name+".2") {
		t.Fatalf("repair did %q, want only the last token removed", done)
	}
	if n, err := d.TenantAddrs("ns=a"); n != 2 || err != nil {
		t.Fatalf("count = %d %v, want 2", n, err)
	}
	d.Close()
}

// fsck's view: records that count nothing, and an earlier layout's second
// link per address, are found and repaired; the count is right after.
func TestTenantRecordsRepaired(t *testing.T) {
	dir := t.TempDir()
	ip := netip.MustParseAddr("10.0.0.3")
	reserveFor(t, dir, "ns=a", "a", ip)
	sd := newStateDir(dir)
	name := fmt.Sprintf("%x", "ns=a")
	token := sd.tokenPath(name, 0)
	old := filepath.Join(sd.tenantsDir(), name)
	if err := os.Mkdir(old, 0o700); err != nil {
		t.Fatal(err)
	}
	plant := map[string]string{
		filepath.Join(old, ip.String()):                "not part of the tenant records' layout",
		sd.recordPath(netip.MustParseAddr("10.0.0.4")): "its address is not reserved",
	}
	for p := range plant {
		if err := os.Link(token, p); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(sd.recordsDir(), "not-an-address")
	if err := os.WriteFile(stray, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir, time.Second) // the index is valid: nothing repairs yet
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, _ := d.TenantAddrs("ns=a"); n != 3 {
		t.Fatalf("before the repair the count is %d, want the planted 3", n)
	}
	recs, err := d.tenantRecords([]netip.Addr{ip})
	if err != nil {
		t.Fatal(err)
	}
	stale := map[string]string{}
	for _, r := range recs {
		if r.Stale() != "" {
			stale[r.Path] = r.Stale()
		}
	}
	if len(stale) != 3 || stale[stray] != "names no address" || !strings.HasPrefix(stale[old], plant[filepath.Join(old, ip.String())]) ||
		stale[sd.recordPath(netip.MustParseAddr("10.0.0.4"))] != plant[sd.recordPath(netip.MustParseAddr("10.0.0.4"))] {
		t.Fatalf("stale records %v", stale)
	}
	if _, err := d.RepairTenants(); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.TenantAddrs("ns=a"); n != 1 {
		t.Fatalf("after the repair the count is %d, want 1", n)
	}
	for _, p := range []string{old, stray} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the repair", p)
		}
	}
}

// A token that cannot be looked at (here _tok is a file, so lstat(2)
// says ENOTDIR) is an I/O error of the count, code 5, never a panic.
func TestTenantCountLstatError(t *testing.T) {
	dir := t.TempDir()
	sd := newStateDir(dir)
	if err := os.Mkdir(sd.tenantsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sd.tokensDir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := TenantAddrsUnlocked(dir, "ns=a", os.Geteuid())
	if cnierr.Code(err) != cnierr.CodeIO || !errors.Is(err, syscall.ENOTDIR) || n != 0 {
		t.Fatalf("count = %d, %v; want code 5 (ENOTDIR)", n, err)
	}
}

// A token chain that cannot be read (here its second token is a
// directory) is an error of the search for unused tokens, not a chain
// silently skipped: fsck would otherwise report nothing to repair.
func TestUnusedTokensChainError(t *testing.T) {
	dir := t.TempDir()
	reserveFor(t, dir, "ns=a", "a", netip.MustParseAddr("10.0.0.3"))
	sd := newStateDir(dir)
	if err := os.Mkdir(sd.tokenPath(fmt.Sprintf("%x", "ns=a"), 1), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := sd.unusedTokens(); cnierr.Code(err) != cnierr.CodeIO {
		t.Fatalf("unusedTokens over an unreadable chain: %v, want code 5", err)
	}
}

// stuckRecord makes a tenant record of token at rec that os.Remove
// cannot remove (ENOTEMPTY, even for root): a directory holding the link
// that counts, so the count is what a record left over would make it.
func stuckRecord(t *testing.T, token, rec string) {
	t.Helper()
	if err := os.RemoveAll(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(token, filepath.Join(rec, "link")); err != nil {
		t.Fatal(err)
	}
}

// A tenant record that a release, or a failed reserve's undo, cannot
// remove must not count past that operation: the index is left stale,
// and the next operation's rebuild removes the record, so its count is
// exact (docs/tenancy.md: no ADD counts an address its tenant does not
// have).
func TestTenantCountAfterFailedUntag(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.7")
	a := Attachment{ContainerID: "c1", IfName: "eth0"}
	token := func(dir string) string { return newStateDir(dir).tokenPath(fmt.Sprintf("%x", "ns=a"), 0) }
	t.Run("release", func(t *testing.T) {
		dir := t.TempDir()
		reserveFor(t, dir, "ns=a", a.ContainerID, ip)
		stuckRecord(t, token(dir), newStateDir(dir).recordPath(ip))
		d, err := Open(dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := d.Release(a, ip); !ok || err == nil {
			t.Fatalf("release = %v %v, want done with the record's error", ok, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got := counts(t, dir, "ns=a"); got[0] != 0 {
			t.Fatalf("count after the release = %d, want 0", got[0])
		}
	})
	t.Run("reserve", func(t *testing.T) {
		dir := t.TempDir()
		d, err := Open(dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		d.ForTenant("ns=a")
		d.linkToken = func(tok, rec string) error {
			if err := os.Link(tok, rec); err != nil {
				return err // no token yet: tag makes it
			}
			stuckRecord(t, tok, rec)
			return nil
		}
		// The scratch file cannot be written: the link never happens.
		if err := os.MkdirAll(filepath.Join(newStateDir(dir).scratch(), "x"), 0o700); err != nil {
			t.Fatal(err)
		}
		if ok, err := d.Reserve(a, ip); ok || err == nil {
			t.Fatalf("reserve = %v %v, want a failure", ok, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got := counts(t, dir, "ns=a"); got[0] != 0 {
			t.Fatalf("count after the failed reserve = %d, want 0", got[0])
		}
	})
}
