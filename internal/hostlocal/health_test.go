package hostlocal

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// An index entry edited behind the stamp's back (the stamp stays valid)
// is found by Examine, which changes nothing, and fixed by Repair, which
// keeps every reservation and leaves a valid stamp.
func TestExamineAndRepairIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	d := openT(t, dir)
	a, b := Attachment{ContainerID: "a", IfName: "eth0"}, Attachment{ContainerID: "b", IfName: "eth0"}
	for _, r := range []struct {
		a  Attachment
		ip string
	}{{a, "10.0.0.2"}, {b, "10.0.0.3"}} {
		if ok, err := d.Reserve(r.a, netip.MustParseAddr(r.ip)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if err := d.SetLastReserved(0, netip.MustParseAddr("10.0.0.3")); err != nil {
		t.Fatal(err)
	}
	closeT(t, d)

	h, err := Examine(dir, time.Second)
	if err != nil || h.Index != IndexValid || len(h.IndexProblems) != 0 || len(h.Stale) != 0 || len(h.Reservations) != 2 || len(h.Cursors) != 1 {
		t.Fatalf("clean directory: %+v, %v", h, err)
	}
	// Rewriting a bucket in place does not change the index directory's
	// mtime: the stamp stays valid and plugins would trust the lie.
	setIndexEntry(t, dir, a, "10.0.0.3")
	if !indexValid(t, dir) {
		t.Fatal("the test's edit invalidated the stamp")
	}
	before := readBuckets(t, dir)
	h, err = Examine(dir, time.Second)
	if err != nil || len(h.IndexProblems) != 1 || !strings.Contains(h.IndexProblems[0], "a@eth0 with 10.0.0.3, the reservations say 10.0.0.2") {
		t.Fatalf("edited entry: %q, %v", h.IndexProblems, err)
	}
	if after := readBuckets(t, dir); after[a.ContainerID+"@eth0"] != before[a.ContainerID+"@eth0"] {
		t.Error("Examine changed the index")
	}
	names := func() []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	want := slices.DeleteFunc(names(), func(n string) bool { return n == "last_reserved_ip.0" })
	if err := Repair(dir, time.Second, []int{0}); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	// The rebuilt index and the dropped cursor are all Repair changed.
	if got := names(); !slices.Equal(got, want) {
		t.Errorf("after Repair the directory holds %q, want %q", got, want)
	}
	if !indexValid(t, dir) || indexEntry(t, dir, a) != "10.0.0.2" {
		t.Errorf("after Repair: valid %v, a's entry %q", indexValid(t, dir), indexEntry(t, dir, a))
	}
	for _, ip := range []string{"10.0.0.2", "10.0.0.3"} {
		if !exists(filepath.Join(dir, ip)) {
			t.Errorf("Repair removed reservation %s", ip)
		}
	}
	if exists(filepath.Join(dir, "last_reserved_ip.0")) {
		t.Error("the dropped cursor is still there")
	}
	if h, _ := Examine(dir, time.Second); len(h.IndexProblems)+len(h.Stale) != 0 || h.Index != IndexValid {
		t.Errorf("after Repair: %+v", h)
	}
}

// Scratch files are spares while they have one name; a second name, a
// half-done cursor update and an interrupted rebuild's tree are stale.
func TestStaleScratch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	closeT(t, openT(t, dir))
	idx := IndexDir(dir)
	writeFile := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(filepath.Join(idx, scratchName), "x")
	writeFile(filepath.Join(idx, cursorSpare), "y")
	d := stateDir{dir: dir, idx: idx}
	if stale, err := d.staleScratch(); err != nil || len(stale) != 0 {
		t.Fatalf("spares reported stale: %v %v", stale, err)
	}
	if err := os.Link(filepath.Join(idx, scratchName), filepath.Join(dir, "10.0.0.9")); err != nil {
		t.Fatal(err)
	}
	writeFile(filepath.Join(idx, cursorOld), "z")
	if err := os.Mkdir(filepath.Join(filepath.Dir(idx), ".net.old"), 0o755); err != nil {
		t.Fatal(err)
	}
	stale, err := d.staleScratch()
	if err != nil || len(stale) != 3 {
		t.Fatalf("stale = %v, %v", stale, err)
	}
	// The link changed D, so Repair's Open rebuilds the index, which
	// discards everything in the old index tree.
	if err := Repair(dir, time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if stale, _ := d.staleScratch(); len(stale) != 0 || !exists(filepath.Join(dir, "10.0.0.9")) {
		t.Errorf("after Repair: stale %v, reservation kept %v", stale, exists(filepath.Join(dir, "10.0.0.9")))
	}
}

// A bucket edited behind the stamp's back into lines that are no entry
// (a blank one included) is reported line by line, never a crash.
func TestExamineMalformedBucketLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	closeT(t, openT(t, dir))
	b00 := filepath.Join(IndexDir(dir), bucketName(0))
	if err := os.WriteFile(b00, []byte("\nnoat 10.0.0.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !indexValid(t, dir) {
		t.Fatal("the test's edit invalidated the stamp")
	}
	h, err := Examine(dir, time.Second)
	if err != nil || len(h.IndexProblems) != 2 {
		t.Fatalf("malformed lines: %q, %v", h.IndexProblems, err)
	}
	for i, p := range h.IndexProblems {
		if want := fmt.Sprintf("index bucket b00: line %d is not", i+1); !strings.HasPrefix(p, want) {
			t.Errorf("problem %d: %q, want it to start %q", i, p, want)
		}
	}
}

// Repair rebuilds the index of a directory whose stamp is valid without
// losing what the stamp records: a range set found full is still full.
func TestRepairKeepsExhaustedMarks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	d := openT(t, dir)
	if err := d.MarkExhausted(0); err != nil {
		t.Fatal(err)
	}
	closeT(t, d)
	if err := Repair(dir, time.Second, nil); err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if ids, err := Exhausted(dir); err != nil || !slices.Equal(ids, []int{0}) || !indexValid(t, dir) {
		t.Errorf("after Repair: exhausted %v %v, index valid %v; want [0], valid", ids, err, indexValid(t, dir))
	}
}
