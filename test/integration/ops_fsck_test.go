package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// restoreStamp puts the directories' mtimes back to the stamp, so that
// damage done by hand is invisible to the stamp, as a torn write the
// kernel did not finish or a bit flip would be.
func restoreStamp(t *testing.T, dir, idx string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(idx, "stamp"))
	if err != nil {
		t.Fatal(err)
	}
	var nanos int64
	for _, c := range strings.SplitN(string(b), "\n", 2)[0] {
		nanos = nanos*10 + int64(c-'0')
	}
	at := time.Unix(0, nanos)
	for _, p := range []string{dir, idx} {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

type finding struct {
	Dir, Severity, Path, Finding, Repair string
	Repaired                             bool
}

func fsckJSON(t *testing.T, l *opsLab, want int, args ...string) []finding {
	t.Helper()
	var fs []finding
	out := l.cli(want, append([]string{"fsck", "--data-dir", l.dataDir, "-o", "json", "--conf-dir", l.confDir}, args...)...)
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatalf("fsck -o json: %v: %s", err, out)
	}
	return fs
}

// Each kind of damage is found; --repair fixes what it may and deletes no
// reservation; what is left is reported again, and plugins go on working.
func TestOpsFsckDamagedState(t *testing.T) {
	l := newOpsLab(t)
	l.network("10-dmg.conflist", "dmg", `{"type":"ipam-da-pools","dataDir":"DATA","ranges":[[{"subnet":"10.80.0.0/24"}]]}`)
	l.network("20-pool.conflist", "pnet", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"dpool","subnet":"10.81.0.0/24"}]}`)
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		l.mustAdd("dmg", id, "eth0")
		l.mustAdd("pnet", id, "eth0")
	}
	dir, idx := filepath.Join(l.dataDir, "dmg"), filepath.Join(l.dataDir, "_index", "dmg")
	pool := filepath.Join(l.dataDir, "_pools", "dpool")

	// A garbage reservation file (what an interrupted upstream host-local
	// can leave), then an ADD that re-stamps the directory around it.
	writeFile(t, filepath.Join(dir, "10.80.0.200"), "\x00\x17garbage\xff")
	l.mustAdd("dmg", "c7", "eth0")
	// A torn bucket: the first non-empty bucket cut in the middle of a
	// line, rewritten in place as the engine does (no directory change).
	var torn string
	for _, de := range mustReadDir(t, idx) {
		if b, _ := os.ReadFile(filepath.Join(idx, de.Name())); strings.HasPrefix(de.Name(), "b") && len(b) > 6 {
			torn = de.Name()
			writeFile(t, filepath.Join(idx, torn), string(b[:len(b)-4]))
			break
		}
	}
	// A stale scratch file of an interrupted cursor update, and the
	// leftovers of an interrupted rebuild beside the index.
	writeFile(t, filepath.Join(idx, ".tmpw-old"), "10.80.0.3")
	if err := os.Mkdir(filepath.Join(l.dataDir, "_index", ".dmg.new"), 0o755); err != nil {
		t.Fatal(err)
	}
	restoreStamp(t, dir, idx)
	// The pool's cursor moved outside its range, in place.
	writeFile(t, filepath.Join(pool, "last_reserved_ip.0"), "10.99.0.1")
	restoreStamp(t, pool, filepath.Join(l.dataDir, "_pools", "_index", "dpool"))
	before := l.cli(0, "leases", "--data-dir", l.dataDir, "-o", "json")

	fs := fsckJSON(t, l, 1)
	expect := []struct{ path, finding, repair string }{
		{"_index/dmg", "index bucket " + torn + ": line", "rebuild the index"},
		{"_index/dmg/.tmpw-old", "stale scratch file", "remove it"},
		{"_index/.dmg.new", "stale scratch file", "remove it"},
		{"dmg/10.80.0.200", "reservation file does not hold a valid container ID", ""},
		{"_pools/dpool/last_reserved_ip.0", "cursor 10.99.0.1 is outside range set 0 (10.81.0.1-10.81.0.254)", "remove it"},
	}
	find := func(fs []finding, path, what string) *finding {
		for i := range fs {
			if fs[i].Path == "$LAB/data/"+path && strings.Contains(fs[i].Finding, what) {
				return &fs[i]
			}
		}
		return nil
	}
	for _, e := range expect {
		f := find(fs, e.path, e.finding)
		if f == nil || f.Severity != "problem" || f.Repair != e.repair || f.Repaired {
			t.Errorf("no unrepaired problem %q at %s with repair %q in:\n%+v", e.finding, e.path, e.repair, fs)
		}
	}
	// The torn line is also a missing entry: one finding more.
	if f := find(fs, "_index/dmg", "has no line for"); f == nil || len(fs) != len(expect)+1 {
		t.Errorf("%d findings, want %d with the torn line's lost entry: %+v", len(fs), len(expect)+1, fs)
	}
	// Without --conf-dir, the cursor's range is unknown: not a finding.
	if out := l.cli(1, "fsck", "--data-dir", l.dataDir, "--no-headers"); strings.Contains(out, "last_reserved_ip") {
		t.Errorf("cursor reported without a configuration:\n%s", out)
	}

	fs = fsckJSON(t, l, 1, "--repair") // the garbage reservation remains
	for _, e := range expect {
		if f := find(fs, e.path, e.finding); f == nil || f.Repaired != (e.repair != "") {
			t.Errorf("after --repair, %s: %+v", e.path, f)
		}
	}
	if after := l.cli(0, "leases", "--data-dir", l.dataDir, "-o", "json"); after != before {
		t.Errorf("--repair changed the reservations:\nbefore %s\nafter  %s", before, after)
	}
	for _, p := range []string{filepath.Join(idx, ".tmpw-old"), filepath.Join(l.dataDir, "_index", ".dmg.new"), filepath.Join(pool, "last_reserved_ip.0")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after --repair: %v", p, err)
		}
	}
	fs = fsckJSON(t, l, 1)
	if len(fs) != 1 || fs[0].Path != "$LAB/data/dmg/10.80.0.200" {
		t.Errorf("after --repair, fsck finds %+v; want only the garbage reservation", fs)
	}
	// The operator inspects the garbage and releases it; its bytes never
	// reach the terminal raw.
	if out := l.cli(0, "release", "--data-dir", l.dataDir, "10.80.0.200", "--network", "dmg"); out != "released 10.80.0.200 (network dmg, container ??garbage?, owner invalid)\n" {
		t.Errorf("release of the garbage printed %q", out)
	}
	if fs := fsckJSON(t, l, 0); len(fs) != 0 {
		t.Errorf("after releasing the garbage: %+v", fs)
	}
	// The repaired index serves plugins: c1 holds an address, so a second
	// ADD is a duplicate (102), found through the rebuilt bucket.
	if r := l.call("ADD", "dmg", "c1", "eth0"); r.Err() == nil || r.Err().Code != 102 {
		t.Errorf("duplicate ADD after repair: exit %d %s", r.Exit, r.Stdout)
	}
	if got := l.mustAdd("pnet", "c8", "eth0"); got != "10.81.0.8/24 gw 10.81.0.1" {
		t.Errorf("pool ADD after the cursor was removed got %s", got)
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return des
}
