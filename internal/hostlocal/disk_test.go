package hostlocal

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cniplugins/cniplugins/internal/addrspace"
	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func openT(t testing.TB, dir string) *Disk {
	t.Helper()
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func closeT(t testing.TB, d *Disk) {
	t.Helper()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// indexValid reports whether the next Open would trust the index.
func indexValid(t *testing.T, dir string) bool {
	nanos := stampNanos(t, IndexDir(dir))
	d := newStateDir(dir)
	for _, p := range []string{d.dir, d.idx} {
		m, err := d.dirMtime(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err != nil || m != nanos {
			return false
		}
	}
	return nanos > 0
}

func TestDiskExactBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	d := openT(t, dir)
	rs := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "203.0.113.0/24"})
	v6 := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "2001:db8:0:1::/64", RangeStart: "2001:db8:0:1::0a00"})
	al := alloc.New(d)
	if _, _, err := al.Allocate(Attachment{ContainerID: "cid", IfName: "eth0"}, 0, rs, netip.Addr{}, "r"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := al.Allocate(Attachment{ContainerID: "cid", IfName: "eth0"}, 1, v6, netip.Addr{}, "r"); err != nil {
		t.Fatal(err)
	}
	closeT(t, d)
	want := map[string]string{
		"203.0.113.2":        "cid\r\neth0",
		"2001:db8:0:1::a00":  "cid\r\neth0",
		"last_reserved_ip.0": "203.0.113.2",
		"last_reserved_ip.1": "2001:db8:0:1::a00",
		"lock":               "",
	}
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != len(want) {
		t.Fatalf("directory holds %v", names)
	}
	for name, content := range want {
		if got := readString(t, filepath.Join(dir, name)); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "203.0.113.2")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if got := indexEntry(t, dir, Attachment{ContainerID: "cid", IfName: "eth0"}); got != "203.0.113.2 2001:db8:0:1::a00" {
		t.Errorf("index entry = %q", got)
	}
	if !indexValid(t, dir) {
		t.Error("index not valid after Close")
	}
	if exists(filepath.Join(IndexDir(dir), scratchName)) {
		t.Error("scratch file still names a reservation")
	}
}

// readBuckets parses every bucket file of dir's index into key -> the
// space-separated addresses, checking that each line sits in its bucket
// and that lines are sorted.
func readBuckets(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for n := range numBuckets {
		data, err := os.ReadFile(filepath.Join(IndexDir(dir), bucketName(uint8(n))))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		for line := range strings.Lines(string(data)) {
			key, addrs, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			id, ifname, _ := strings.Cut(key, "@")
			if !ok || bucketOf(Attachment{ContainerID: id, IfName: ifname}) != uint8(n) || key <= prev {
				t.Fatalf("bucket %s: bad line %q", bucketName(uint8(n)), line)
			}
			prev = key
			out[key] = addrs
		}
	}
	return out
}

// indexEntry is a's addresses in the index, space-separated.
func indexEntry(t testing.TB, dir string, a Attachment) string {
	t.Helper()
	key, ok := entryKey(a)
	if !ok {
		t.Fatalf("%v is not indexable", a)
	}
	return readBuckets(t, dir)[key]
}

// setIndexEntry rewrites a's line in its bucket file, keeping the others.
func setIndexEntry(t testing.TB, dir string, a Attachment, addrs string) {
	t.Helper()
	key, _ := entryKey(a)
	n := bucketOf(a)
	var s strings.Builder
	all := readBuckets(t, dir)
	all[key] = addrs
	keys := slices.Sorted(maps.Keys(all))
	for _, k := range keys {
		id, ifname, _ := strings.Cut(k, "@")
		if bucketOf(Attachment{ContainerID: id, IfName: ifname}) == n {
			s.WriteString(k + " " + all[k] + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(IndexDir(dir), bucketName(n)), []byte(s.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeForeign creates a reservation as host-local (or an admin) would,
// behind the index's back.
func writeForeign(t testing.TB, dir, ip, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ip), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiskRebuildAfterForeignChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	a := mustAlloc(t, h, alloctest.CidA, rs)
	if !indexValid(t, dir) {
		t.Fatal("index not valid")
	}

	// Foreign create: the duplicate check must see it.
	writeForeign(t, dir, "10.0.0.5", "cid-x\r\neth1")
	if indexValid(t, dir) {
		t.Fatal("foreign create not detected")
	}
	_, err := allocate(t, h, Attachment{ContainerID: "cid-x", IfName: "eth1"}, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	if got := indexEntry(t, dir, Attachment{ContainerID: "cid-x", IfName: "eth1"}); got != "10.0.0.5" {
		t.Fatalf("rebuilt entry = %q", got)
	}

	// Foreign remove: the attachment may allocate again.
	if err := os.Remove(filepath.Join(dir, a.String())); err != nil {
		t.Fatal(err)
	}
	if indexValid(t, dir) {
		t.Fatal("foreign remove not detected")
	}
	if _, err := allocate(t, h, alloctest.CidA, 0, rs); err != nil {
		t.Fatal(err)
	}
}

func TestDiskStaleEntryIgnored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	b := mustAlloc(t, h, alloctest.CidB, rs)
	// Forge alloctest.CidA's entry to claim b and a missing address, keeping the
	// stamp valid so that only verification can catch it.
	nanos := stampNanos(t, IndexDir(dir))
	setIndexEntry(t, dir, alloctest.CidA, b.String()+" 10.0.0.6")
	if err := os.Chtimes(IndexDir(dir), time.Time{}, time.Unix(0, nanos)); err != nil {
		t.Fatal(err)
	}
	if !indexValid(t, dir) {
		t.Fatal("forgery invalidated the stamp; test is not testing verification")
	}
	h.with(t, func(al *alloc.Allocator, s *Disk) {
		if rel, err := alloc.Release(s, alloctest.CidA, nil); err != nil || len(rel) != 0 {
			t.Fatalf("released %v %v", rel, err)
		}
		if _, _, err := al.Allocate(alloctest.CidA, 0, rs, netip.Addr{}, "r"); err != nil {
			t.Fatalf("stale entry caused %v", err)
		}
	})
	if o, ok, _ := (memHarnessOwner{dir}).owner(t, b); !ok || o != alloctest.CidB {
		t.Fatal("stale entry released another attachment's address")
	}
	if got := indexEntry(t, dir, alloctest.CidA); got != "10.0.0.3" {
		t.Fatalf("entry not rewritten: %q", got)
	}
}

type memHarnessOwner struct{ dir string }

func (m memHarnessOwner) owner(t *testing.T, ip netip.Addr) (Attachment, bool, error) {
	d := openT(t, m.dir)
	defer closeT(t, d)
	return d.Owner(ip)
}

func TestDiskCrashLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	a := mustAlloc(t, h, alloctest.CidA, rs)
	idx := IndexDir(dir)
	parent, base := filepath.Split(idx)
	// A crash mid-swap: the live index was renamed away, the new one
	// never renamed in; plus scratch files of a killed ADD.
	if err := os.Rename(idx, filepath.Join(parent, "."+base+".old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(parent, "."+base+".new"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeForeign(t, filepath.Join(parent, "."+base+".new"), bucketName(0), "junk@eth0 10.0.0.6\n")
	if stampNanos(t, idx) > 0 {
		t.Fatal("half-swapped index looks valid")
	}
	h.with(t, func(al *alloc.Allocator, s *Disk) {
		if got, _ := s.ByAttachment(alloctest.CidA); !slices.Equal(got, []netip.Addr{a}) {
			t.Fatalf("after half swap: %v", got)
		}
	})
	// Killed ADD: scratch file with content, linked or not.
	writeForeign(t, idx, scratchName, "cid-z\r\neth0")
	writeForeign(t, idx, cursorOld, "10.0.0")
	_, err := allocate(t, h, alloctest.CidA, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	for _, p := range []string{filepath.Join(parent, "."+base+".old"), filepath.Join(parent, "."+base+".new"),
		filepath.Join(idx, scratchName), filepath.Join(idx, cursorOld)} {
		if exists(p) {
			t.Errorf("leftover %s survived", p)
		}
	}
	// A garbled stamp (killed mid-write) is just invalid.
	writeForeign(t, idx, stampName, "17")
	if got := mustAlloc(t, h, alloctest.CidB, rs); got != netip.MustParseAddr("10.0.0.3") {
		t.Fatalf("got %v", got)
	}
	if !indexValid(t, dir) {
		t.Fatal("not repaired")
	}
}

func TestDiskUntrustedFallsBackToScan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	mustAlloc(t, h, alloctest.CidA, rs)
	writeForeign(t, IndexDir(dir), stampName, "untrusted\n")
	writeForeign(t, dir, "10.0.0.6", "cid-x\r\neth0")
	_, err := allocate(t, h, Attachment{ContainerID: "cid-x", IfName: "eth0"}, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	h.with(t, func(al *alloc.Allocator, s *Disk) {
		if rel, err := alloc.Release(s, Attachment{ContainerID: "cid-x", IfName: "eth0"}, nil); err != nil || len(rel) != 1 {
			t.Fatalf("release %v %v", rel, err)
		}
	})
	if got := readString(t, filepath.Join(IndexDir(dir), stampName)); got != "untrusted\n" {
		t.Fatalf("stamp = %q", got)
	}
	if ids, err := Exhausted(dir); err != nil || ids != nil {
		t.Fatalf("Exhausted on untrusted = %v %v", ids, err)
	}
}

func TestDiskUnindexableAttachment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	odd := Attachment{ContainerID: "has@at", IfName: "eth0"}
	ip := mustAlloc(t, h, odd, rs)
	_, err := allocate(t, h, odd, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	h.with(t, func(al *alloc.Allocator, s *Disk) {
		if rel, err := alloc.Release(s, odd, nil); err != nil || !slices.Equal(rel, []netip.Addr{ip}) {
			t.Fatalf("release %v %v", rel, err)
		}
	})
	for _, a := range []Attachment{odd, {ContainerID: ".hidden", IfName: "eth0"}, {ContainerID: "../x", IfName: "eth0"}, {ContainerID: "a b", IfName: "eth0"},
		{ContainerID: "a\tb", IfName: "eth0"}, {ContainerID: "a\x00b", IfName: "eth0"}, {ContainerID: "x", IfName: "a b"},
		{ContainerID: "x", IfName: "a\u00a0b"}, {ContainerID: "x", IfName: "a\rb"}} {
		if key, ok := entryKey(a); ok {
			t.Errorf("%v indexed as %q", a, key)
		}
	}
	for _, a := range []Attachment{{ContainerID: "x/../y", IfName: "eth0"}, {ContainerID: "x", IfName: "a/b"},
		{ContainerID: "x", IfName: "a@b"}, {ContainerID: strings.Repeat("x", 300), IfName: "eth0123"}, {ContainerID: "legacy"}} {
		if _, ok := entryKey(a); !ok {
			t.Errorf("%v not indexed", a)
		}
	}
}

func TestDiskExhaustedInvalidatedByForeignRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/30"}) // only .2
	ip := mustAlloc(t, h, alloctest.CidA, rs)
	_, err := allocate(t, h, alloctest.CidB, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodePoolExhausted)
	if ids, _ := Exhausted(dir); !slices.Equal(ids, []int{0}) {
		t.Fatalf("exhausted = %v", ids)
	}
	os.Remove(filepath.Join(dir, ip.String())) // host-local DEL
	if ids, err := Exhausted(dir); err != nil || len(ids) != 0 {
		t.Fatalf("exhausted after foreign release = %v %v", ids, err)
	}
	if ids, err := Exhausted(filepath.Join(t.TempDir(), "never")); err != nil || ids != nil {
		t.Fatalf("exhausted of missing dir = %v %v", ids, err)
	}
}

func TestDiskLockTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	closeT(t, openT(t, dir))
	f, err := os.Open(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Open(dir, 50*time.Millisecond)
	alloctest.AssertCode(t, err, cnierr.CodeTryAgainLater)
	if d := cnierr.As(err).Details; !strings.Contains(d, dir) || !strings.Contains(d, "50ms") {
		t.Fatalf("details %q", d)
	}
	// It waits the whole timeout, then gives up instead of hanging; the
	// upper bound is the timeout plus a margin for a loaded machine, to
	// tell "gave up" from "waited for the holder".
	const margin = 10 * time.Second
	if el := time.Since(start); el < 50*time.Millisecond || el > 50*time.Millisecond+margin {
		t.Fatalf("gave up after %v, want the 50ms timeout (plus at most %s)", el, margin)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	closeT(t, openT(t, dir))
}

func TestDiskIOErrorsAreCode5(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	writeForeign(t, base, "file", "")
	_, err := Open(filepath.Join(file, "net"), time.Second)
	alloctest.AssertCode(t, err, cnierr.CodeIO)
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("cause lost: %v", err)
	}
}

func TestDiskConcurrentOpeners(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	rs := alloctest.MustSet(t, addrspace.RangeConfig{Subnet: "10.0.0.0/24"})
	const n = 40
	got := make([]netip.Addr, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, err := Open(dir, 10*time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			p, _, err := alloc.New(d).Allocate(Attachment{ContainerID: fmt.Sprintf("c%d", i), IfName: "eth0"}, 0, rs, netip.Addr{}, "r")
			errs[i] = errors.Join(err, d.Close())
			got[i] = p.Addr()
		})
	}
	wg.Wait()
	seen := map[netip.Addr]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[got[i]] {
			t.Fatalf("%v handed out twice", got[i])
		}
		seen[got[i]] = true
	}
	d := openT(t, dir)
	defer closeT(t, d)
	if all, _ := d.All(); len(all) != n {
		t.Fatalf("%d reservations on disk", len(all))
	}
}

// TestDiskRecycledInodesStayPrivate runs ADD/DEL cycles that recycle
// inodes and checks that no file of D ever shares its inode with a
// scratch file (which would be rewritten later) and that contents stay
// exact.
func TestDiskRecycledInodesStayPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	for i := range 12 {
		a := Attachment{ContainerID: fmt.Sprintf("c%d", i), IfName: "eth0"}
		ip := mustAlloc(t, h, a, rs)
		if i%3 != 2 {
			h.with(t, func(al *alloc.Allocator, s *Disk) {
				if rel, err := alloc.Release(s, a, nil); err != nil || len(rel) != 1 {
					t.Fatalf("release %v %v", rel, err)
				}
			})
			continue
		}
		if got := readString(t, filepath.Join(dir, ip.String())); got != a.ContainerID+"\r\neth0" {
			t.Fatalf("%s = %q", ip, got)
		}
	}
	for _, p := range []string{dir, IndexDir(dir)} {
		des, _ := os.ReadDir(p)
		for _, de := range des {
			fi, err := os.Lstat(filepath.Join(p, de.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().IsRegular() && nlink(fi) != 1 {
				t.Errorf("%s/%s has %d links", p, de.Name(), nlink(fi))
			}
		}
	}
	if got := readString(t, filepath.Join(dir, "last_reserved_ip.0")); got != "10.0.0.3" {
		t.Fatalf("cursor = %q", got)
	}
	d := openT(t, dir)
	defer closeT(t, d)
	all, _ := d.All()
	if len(all) != 4 {
		t.Fatalf("reservations %v", all)
	}
	for ip, a := range all {
		if got, _ := d.ByAttachment(a); len(got) != 1 || got[0] != ip {
			t.Fatalf("index of %v = %v", a, got)
		}
	}
}

// TestDiskRebuildWritesBuckets takes over a directory of 5,000
// reservations written by host-local: the rebuild must create at most
// numBuckets index files, and lookups after it must work.
func TestDiskRebuildWritesBuckets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	ip := netip.MustParseAddr("10.0.0.1")
	addrs := make([]netip.Addr, n)
	for i := range n {
		ip = ip.Next()
		addrs[i] = ip
		writeForeign(t, dir, ip.String(), fmt.Sprintf("foreign-%d\r\neth0", i))
	}
	legacy := ip.Next()
	writeForeign(t, dir, legacy.String(), "old-one")
	closeT(t, openT(t, dir))
	if !indexValid(t, dir) {
		t.Fatal("index not valid after rebuild")
	}
	des, err := os.ReadDir(IndexDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, de := range des {
		if de.Name() != stampName && !strings.HasPrefix(de.Name(), ".") {
			if len(de.Name()) != 3 || de.Name()[0] != 'b' {
				t.Errorf("unexpected index file %s", de.Name())
			}
			files++
		}
	}
	if files > numBuckets {
		t.Fatalf("rebuild wrote %d files", files)
	}
	if got := readBuckets(t, dir); len(got) != n+1 || got["old-one@"] != legacy.String() {
		t.Fatalf("index holds %d entries, legacy %q", len(got), got["old-one@"])
	}
	d := openT(t, dir)
	for _, i := range []int{0, 1, 2500, n - 1} {
		a := Attachment{ContainerID: fmt.Sprintf("foreign-%d", i), IfName: "eth0"}
		if got, err := d.ByAttachment(a); err != nil || !slices.Equal(got, addrs[i:i+1]) {
			t.Fatalf("ByAttachment(%v) = %v %v", a, got, err)
		}
	}
	if got, _ := d.ByAttachment(Attachment{ContainerID: "old-one"}); !slices.Equal(got, []netip.Addr{legacy}) {
		t.Fatalf("legacy = %v", got)
	}
	if got, _ := d.ByAttachment(Attachment{ContainerID: "nobody", IfName: "eth0"}); len(got) != 0 {
		t.Fatalf("nobody holds %v", got)
	}
	if d.complete {
		t.Fatal("second Open rebuilt the index")
	}
	if rel, err := alloc.Release(d, Attachment{ContainerID: "foreign-7", IfName: "eth0"}, nil); err != nil || !slices.Equal(rel, addrs[7:8]) {
		t.Fatalf("release %v %v", rel, err)
	}
	closeT(t, d)
	if !indexValid(t, dir) {
		t.Fatal("index not valid after release")
	}
	got := readBuckets(t, dir)
	if _, ok := got["foreign-7@eth0"]; ok || len(got) != n || got["foreign-8@eth0"] != addrs[8].String() {
		t.Fatalf("after release: %d entries, foreign-7 %q", len(got), got["foreign-7@eth0"])
	}
}

// TestDiskOldLayoutRebuilt: an index written by a version that kept one
// file per attachment, with a valid stamp, must be rebuilt, not read as
// empty buckets.
func TestDiskOldLayoutRebuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	rs := alloctest.Small(t)
	a := mustAlloc(t, h, alloctest.CidA, rs)
	idx := IndexDir(dir)
	nanos := stampNanos(t, idx)
	des, _ := os.ReadDir(idx)
	for _, de := range des {
		if de.Name() != stampName && !strings.HasPrefix(de.Name(), ".") {
			if err := os.Remove(filepath.Join(idx, de.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeForeign(t, idx, "cid-a@eth0", a.String()+"\n")
	if err := os.Chtimes(idx, time.Time{}, time.Unix(0, nanos)); err != nil {
		t.Fatal(err)
	}
	if !indexValid(t, dir) {
		t.Fatal("old layout does not look valid; test is not testing the layout check")
	}
	_, err := allocate(t, h, alloctest.CidA, 0, rs)
	alloctest.AssertCode(t, err, cnierr.CodeDuplicateAttach)
	if exists(filepath.Join(idx, "cid-a@eth0")) || !exists(filepath.Join(idx, bucketName(0))) {
		t.Fatal("old layout not replaced")
	}
	if got := indexEntry(t, dir, alloctest.CidA); got != a.String() {
		t.Fatalf("entry = %q", got)
	}
}

// A bucket line torn behind a valid stamp still names its addresses,
// which are verified and kept; the first Close that uses it writes it
// back whole.
func TestDiskTornLineRewritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	h := diskHarness{dir}
	ip := mustAlloc(t, h, alloctest.CidA, alloctest.Small(t))
	path := filepath.Join(IndexDir(dir), bucketName(bucketOf(alloctest.CidA)))
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(data), "\n") {
		t.Fatalf("bucket %q, %v", data, err)
	}
	if err := os.WriteFile(path, data[:len(data)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	h.with(t, func(_ *alloc.Allocator, d *Disk) {
		if got, err := d.ByAttachment(alloctest.CidA); err != nil || !slices.Equal(got, []netip.Addr{ip}) {
			t.Fatalf("ByAttachment = %v, %v", got, err)
		}
	})
	if got, err := os.ReadFile(path); err != nil || string(got) != string(data) {
		t.Fatalf("bucket after Close = %q, %v; want %q", got, err, data)
	}
	if hl, err := Examine(dir, time.Second); err != nil || hl.Index != IndexValid || len(hl.IndexProblems) != 0 {
		t.Fatalf("Examine = %+v, %v", hl, err)
	}
}

// An attachment the index cannot name makes the cache a scan's, part-way
// through an operation: what the operation changed before is written
// back all the same, so the index stays exact.
func TestDiskUnindexableAfterChange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	ip1, ip2 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	d := openT(t, dir)
	if ok, err := d.Reserve(alloctest.CidA, ip1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	closeT(t, d)
	d = openT(t, dir)
	if ok, err := d.Release(alloctest.CidA, ip1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	odd := Attachment{ContainerID: "has@at", IfName: "eth0"}
	if ok, err := d.Reserve(odd, ip2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got, err := d.ByAttachment(odd); err != nil || !slices.Equal(got, []netip.Addr{ip2}) {
		t.Fatalf("ByAttachment(%v) = %v %v", odd, got, err)
	}
	closeT(t, d)
	h, err := Examine(dir, time.Second)
	if err != nil || h.Index != IndexValid || len(h.IndexProblems) != 0 {
		t.Fatalf("index after the scan: %s %q %v", h.Index, h.IndexProblems, err)
	}
}

// fsAppendFL is FS_APPEND_FL of <linux/fs.h>, which x/sys/unix lacks.
const fsAppendFL = 0x20

// setAppendOnly sets or clears dir's append-only flag (chattr +a):
// entries can be made in it, none removed, even by root.
func setAppendOnly(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	flags &^= fsAppendFL
	if on {
		flags |= fsAppendFL
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}

// appendOnlyCapableDir is an empty directory on a file system that has
// append-only directories: the test's temporary directory, or, where
// that is a tmpfs, one in /var/tmp, else beside the test's sources (on
// the checkout's disk).
func appendOnlyCapableDir(t *testing.T) string {
	t.Helper()
	var errs []error
	for _, parent := range []string{t.TempDir(), "/var/tmp", "."} {
		dir, err := os.MkdirTemp(parent, "appendonly-")
		if err == nil {
			t.Cleanup(func() { _ = setAppendOnly(dir, false); _ = os.RemoveAll(dir) })
			if err = setAppendOnly(dir, true); err == nil {
				if err = setAppendOnly(dir, false); err == nil {
					return dir
				}
			}
		}
		errs = append(errs, err)
	}
	t.Skipf("no append-only directories here (needs root on ext4, xfs, btrfs): %v", errors.Join(errs...))
	return ""
}

// A reservation made whose scratch name cannot be removed is an ADD
// that fails, but its reservation exists: the index must name it, so
// that the DEL the runtime sends after a failed ADD, without prevResult,
// finds and frees it.
func TestReserveIndexedWhenScratchStays(t *testing.T) {
	dir := appendOnlyCapableDir(t)
	a, ip := Attachment{ContainerID: "c1", IfName: "eth0"}, netip.MustParseAddr("10.0.0.7")
	d, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = setAppendOnly(d.idx, false) })
	if err := setAppendOnly(d.idx, true); err != nil {
		t.Fatal(err)
	}
	ok, err := d.Reserve(a, ip)
	if err := setAppendOnly(d.idx, false); err != nil {
		t.Fatal(err)
	}
	if !ok || err == nil {
		t.Fatalf("reserve = %v %v, want made with the scratch name's error", ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, err := d.ByAttachment(a); err != nil || !slices.Equal(got, []netip.Addr{ip}) {
		t.Fatalf("the next operation's index for %v = %v %v, want %s", a, got, err, ip)
	}
}
