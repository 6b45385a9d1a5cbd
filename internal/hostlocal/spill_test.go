package hostlocal

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// A spill record says an attachment may hold addresses down D's chain;
// an attachment without one holds none there, unless it can have no
// record at all.
func TestSpillRecords(t *testing.T) {
	dir := t.TempDir()
	h := diskHarness{dir}
	spilled := Attachment{ContainerID: "c1", IfName: "eth0", Network: "net"}
	other := Attachment{ContainerID: "c2", IfName: "eth0", Network: "net"}
	may := func(a Attachment) bool {
		t.Helper()
		var got bool
		h.with(t, func(_ *alloc.Allocator, d *Disk) {
			var err error
			if got, err = d.MaySpill(a); err != nil {
				t.Fatal(err)
			}
		})
		return got
	}
	if may(spilled) || may(other) {
		t.Fatal("MaySpill before any record")
	}
	h.with(t, func(_ *alloc.Allocator, d *Disk) {
		if err := d.RecordSpill(spilled); err != nil {
			t.Fatal(err)
		}
	})
	if !may(spilled) || may(other) {
		t.Fatalf("after recording c1: MaySpill c1 %v, c2 %v; want true, false", may(spilled), may(other))
	}
	// The new _spill directory leaves the index trusted and is no
	// reservation, cursor or stray file of D.
	if state, _, err := newStateDir(dir).trust(); state != IndexValid || err != nil {
		t.Fatalf("index %s %v after the first record, want valid", state, err)
	}
	if ents, err := readEntries(dir, os.Geteuid()); err != nil || len(ents.other) != 0 {
		t.Fatalf("entries of D: other %v, %v", ents.other, err)
	}
	h.with(t, func(_ *alloc.Allocator, d *Disk) {
		for _, a := range []Attachment{spilled, other} { // other has none: no error
			if err := d.ForgetSpill(a); err != nil {
				t.Fatal(err)
			}
		}
	})
	if may(spilled) {
		t.Fatal("MaySpill after ForgetSpill")
	}

	// No record can name these: they are always looked for everywhere.
	for _, a := range []Attachment{
		{ContainerID: "id@with-at", IfName: "eth0"},
		{ContainerID: strings.Repeat("x", 200), IfName: "eth0"},
	} {
		h.with(t, func(_ *alloc.Allocator, d *Disk) {
			if err := d.RecordSpill(a); err != nil {
				t.Fatal(err)
			}
		})
		if !may(a) {
			t.Errorf("MaySpill(%.20s...) = false for an attachment no record can name", a.ContainerID)
		}
	}
}

// GC removes the records of the attachments it does not keep, by their
// network as GC's rule judges reservations, and anything that is no
// record.
func TestGCSpills(t *testing.T) {
	dir := t.TempDir()
	h := diskHarness{dir}
	live := Attachment{ContainerID: "live", IfName: "eth0", Network: "net"}
	dead := Attachment{ContainerID: "dead", IfName: "eth0", Network: "net"}
	elsewhere := Attachment{ContainerID: "dead", IfName: "eth1", Network: "other-net"}
	h.with(t, func(_ *alloc.Allocator, d *Disk) {
		for _, a := range []Attachment{live, dead, elsewhere} {
			if err := d.RecordSpill(a); err != nil {
				t.Fatal(err)
			}
		}
	})
	junk := filepath.Join(dir, spillDirName, "not-hex")
	if err := os.WriteFile(junk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	keep := alloc.NewKeepSet("net", []alloc.Attachment{{ContainerID: "live", IfName: "eth0"}}).Keeps
	h.with(t, func(_ *alloc.Allocator, d *Disk) {
		gone, err := alloc.GCSpills(d, keep)
		if err != nil || len(gone) != 1 || gone[0] != dead {
			t.Fatalf("alloc.GCSpills: %v %v, want the dead record removed", gone, err)
		}
		for a, want := range map[Attachment]bool{live: true, dead: false, elsewhere: true} {
			if got, _ := d.MaySpill(a); got != want {
				t.Errorf("after GC, MaySpill(%s/%s) = %v, want %v", a.ContainerID, a.IfName, got, want)
			}
		}
	})
	if _, err := os.Lstat(junk); !os.IsNotExist(err) {
		t.Errorf("junk in _spill survived GC: %v", err)
	}
}

func TestSpillOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want Attachment
	}{
		{name: mustSpillName(t, Attachment{ContainerID: "abc", IfName: "eth0"}), ok: true, want: Attachment{ContainerID: "abc", IfName: "eth0"}},
		{name: "zz"},     // not hex
		{name: "616263"}, // "abc": no '@'
		{name: "4061"},   // "@a": no container ID
		{name: strings.ToUpper(mustSpillName(t, Attachment{ContainerID: "zz", IfName: "eth0"}))}, // not as written
	} {
		got, ok := spillOwner(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("spillOwner(%q) = %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func mustSpillName(t *testing.T, a Attachment) string {
	t.Helper()
	n, ok := spillName(a)
	if !ok {
		t.Fatalf("no spill name for %v", a)
	}
	return n
}

// The tenant's lock keeps a second holder out (code 11 once the wait
// times out), and the count without a pool's lock is the count with it.
func TestTenantLockAndUnlockedCount(t *testing.T) {
	pools := filepath.Join(t.TempDir(), "_pools")
	dir := filepath.Join(pools, "p")
	for i := 1; i <= 3; i++ {
		reserveFor(t, dir, "ns=a", "a"+string(rune('0'+i)), netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}))
	}
	for _, tc := range []struct {
		tenant string
		want   int
	}{{"ns=a", 3}, {"ns=b", 0}} {
		if n, err := TenantAddrsUnlocked(dir, tc.tenant, os.Geteuid()); n != tc.want || err != nil {
			t.Errorf("TenantAddrsUnlocked(%s) = %d %v, want %d", tc.tenant, n, err, tc.want)
		}
	}
	if n, err := TenantAddrsUnlocked(filepath.Join(pools, "never-used"), "ns=a", os.Geteuid()); n != 0 || err != nil {
		t.Errorf("count in a pool never used = %d %v, want 0", n, err)
	}

	lk, err := LockTenant(pools, "ns=a", os.Geteuid(), time.Second, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockTenant(pools, "ns=a", os.Geteuid(), 50*time.Millisecond, nil); cnierr.Code(err) != cnierr.CodeTryAgainLater || !strings.Contains(err.Error(), "tenant is locked") {
		t.Fatalf("second holder of the tenant's lock: %v, want code 11", err)
	}
	other, err := LockTenant(pools, "ns=b", os.Geteuid(), 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("another tenant's lock: %v", err)
	}
	other.Close()
	lk.Close()
	again, err := LockTenant(pools, "ns=a", os.Geteuid(), 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("the tenant's lock once released: %v", err)
	}
	again.Close()
}
