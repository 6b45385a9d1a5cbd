package hardening

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/plugintest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// victim is a root-only directory outside the data directory, holding a
// root-only file: what a planted symbolic link would have root overwrite,
// fill or read. unchanged fails the test if anything in it changed.
type victim struct{ dir, file string }

func newVictim(t *testing.T) victim {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	v := victim{dir: dir, file: filepath.Join(dir, "secret")}
	if err := os.WriteFile(v.file, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v victim) unchanged(t *testing.T, what string) {
	t.Helper()
	want := map[string]string{".": "drwx------", "secret": `-rw------- "root only\n"`}
	got := snapshot(t, v.dir)
	if d := diff(want, got, ""); len(d) != 0 {
		t.Errorf("%s: the root-only directory changed: %v", what, d)
	}
}

// plantLink replaces path (whatever it is) by a symbolic link to target,
// leaving its directory's mtime as it was, so that the index's stamp
// still vouches for it and the link is used rather than rebuilt away.
func plantLink(t *testing.T, path, target string) {
	t.Helper()
	parent, err := os.Lstat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Dir(path), time.Time{}, parent.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// plantedSetup is ipam-delegated → ipam-ds-static → ipam-da-pools on pool
// p with sticky keys from CNI_ARGS, or ipam-da-pools on network n
// (standalone), in dataDir.
func plantedSetup(dataDir string, standalone bool) setup {
	if standalone {
		return standaloneSetup(dataDir, "n", "10.211.61.0/24", `,"sticky":{"by":["arg"]}`)
	}
	return chainSetup(dataDir, "planted", "p", "10.211.60.0/24", `,"sticky":{"by":["arg"]}`)
}

// attack runs ADD of a new key and of a held one, CHECK, DEL and GC
// against s, each of which must print a CNI result or one typed error,
// and returns the ADD's reply.
func attack(t *testing.T, s setup) testbin.Reply {
	t.Helper()
	add := testbin.Run(stickyCall(s, "ADD", "c-new", "eth0", "k/new"))
	for _, c := range []testbin.Call{
		stickyCall(s, "ADD", "c-held", "eth0", "k/held"),
		stickyCall(s, "CHECK", "c-held", "eth0", "k/held"),
		stickyCall(s, "DEL", "c-held", "eth0", "k/held"),
		stickyCall(s, "DEL", "c-kept", "eth0", ""),
		gcCall(s.plugin, s.conf(`,"cni.dev/valid-attachments":[]`)),
	} {
		r := testbin.Run(c)
		if _, err := plugintest.CheckOutput(r.Exit, r.Stdout); err != nil {
			t.Errorf("%s: %v", c.Command, err)
		}
	}
	return add
}

// prepare leaves s with everything the allocator writes: a held key
// (k/held, its container gone), a reservation (c-kept), a cursor, the
// index with its stamp and scratch files.
func prepare(t *testing.T, s setup) {
	t.Helper()
	testbin.MustSucceed(t, stickyCall(s, "ADD", "c-held", "eth0", "k/held"))
	testbin.MustSucceed(t, stickyCall(s, "DEL", "c-held", "eth0", "k/held"))
	testbin.MustSucceed(t, stickyCall(s, "ADD", "c-kept", "eth0", ""))
	testbin.MustSucceed(t, stickyCall(s, "ADD", "c-gone", "eth0", ""))
	testbin.MustSucceed(t, stickyCall(s, "DEL", "c-gone", "eth0", "")) // leaves the scratch file
	testbin.MustSucceed(t, stickyCall(s, "ADD", "c-gone", "eth0", "k/other"))
	testbin.MustSucceed(t, stickyCall(s, "DEL", "c-gone", "eth0", "k/other")) // a second hold: the record spare
}

// Root never follows a symbolic link planted below its data directory:
// every kind of directory the allocator writes, made a link to a
// root-only directory, is refused (code 7 naming it), and every kind of
// file, made a link to a root-only file, is never written or read through
// (the command succeeds without it or fails with a typed error). Links
// like these can only be left by someone who could once write there, as
// in a directory that was not root's alone when they were made.
func TestPlantedSymlinks(t *testing.T) {
	type plant func(t *testing.T, dataDir, state, idx string, v victim)
	link := func(rel func(dataDir, state, idx string) string, toDir bool) plant {
		return func(t *testing.T, dataDir, state, idx string, v victim) {
			target := v.file
			if toDir {
				target = v.dir
			}
			plantLink(t, rel(dataDir, state, idx), target)
		}
	}
	inState := func(name string) func(string, string, string) string {
		return func(_, state, _ string) string { return filepath.Join(state, name) }
	}
	inIndex := func(name string) func(string, string, string) string {
		return func(_, _, idx string) string { return filepath.Join(idx, name) }
	}
	every := func(dir func(string, string, string) string, match func(name string) bool) plant {
		return func(t *testing.T, dataDir, state, idx string, v victim) {
			d := dir(dataDir, state, idx)
			des, err := os.ReadDir(d)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, de := range des {
				if match(de.Name()) {
					plantLink(t, filepath.Join(d, de.Name()), v.file)
					n++
				}
			}
			if n == 0 {
				t.Fatalf("nothing to plant in %s", d)
			}
		}
	}
	isAddr := func(name string) bool { return strings.Count(name, ".") == 3 }
	allBuckets := func(t *testing.T, dataDir, state, idx string, v victim) {
		for b := range 256 {
			plantLink(t, filepath.Join(idx, fmt.Sprintf("b%02x", b)), v.file)
		}
	}
	tests := []struct {
		name       string
		standalone bool
		plant      plant
		dir        bool // a directory: ADD must be refused with 7
	}{
		{name: "pool directory", plant: link(func(_, state, _ string) string { return state }, true), dir: true},
		{name: "network directory", standalone: true, plant: link(func(_, state, _ string) string { return state }, true), dir: true},
		{name: "_pools", plant: link(func(dataDir, _, _ string) string { return filepath.Join(dataDir, "_pools") }, true), dir: true},
		{name: "_index", plant: link(func(_, _, idx string) string { return filepath.Dir(idx) }, true), dir: true},
		{name: "_index (standalone)", standalone: true, plant: link(func(_, _, idx string) string { return filepath.Dir(idx) }, true), dir: true},
		{name: "index directory", plant: link(func(_, _, idx string) string { return idx }, true), dir: true},
		{name: "_sticky", plant: link(inState("_sticky"), true), dir: true},
		{name: "lock", plant: link(inState("lock"), false)},
		{name: "cursor", plant: link(inState("last_reserved_ip.0"), false)},
		{name: "next free address", plant: func(t *testing.T, dataDir, state, idx string, v victim) {
			for i := 1; i < 8; i++ {
				if p := filepath.Join(state, fmt.Sprintf("10.211.60.%d", i)); !exists(p) {
					plantLink(t, p, v.file)
				}
			}
		}},
		{name: "reservations", plant: every(func(_, state, _ string) string { return state }, isAddr)},
		{name: "hold records", plant: every(func(_, state, _ string) string { return filepath.Join(state, "_sticky") }, func(n string) bool { return strings.HasSuffix(n, ".json") })},
		{name: "stamp", plant: link(inIndex("stamp"), false)},
		{name: "index buckets", plant: allBuckets},
		{name: "scratch file", plant: link(inIndex(".tmp"), false)},
		{name: "cursor spare", plant: link(inIndex(".tmpw"), false)},
		{name: "replaced cursor", plant: link(inIndex(".tmpw-old"), false)},
		{name: "rebuild directories", plant: func(t *testing.T, dataDir, state, idx string, v victim) {
			plantLink(t, filepath.Join(filepath.Dir(idx), "."+filepath.Base(idx)+".new"), v.dir)
			plantLink(t, filepath.Join(filepath.Dir(idx), "."+filepath.Base(idx)+".old"), v.dir)
			plantLink(t, filepath.Join(idx, "stamp"), v.file) // forces a rebuild
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVictim(t)
			dataDir := t.TempDir()
			s := plantedSetup(dataDir, tt.standalone)
			prepare(t, s)
			state := s.stateOf(dataDir)
			idx := filepath.Join(filepath.Dir(state), "_index", filepath.Base(state))
			tt.plant(t, dataDir, state, idx, v)
			add := attack(t, s)
			if tt.dir {
				if e := add.Err(); e == nil || e.Code != 7 || !strings.Contains(e.Details, "symbolic link") {
					t.Errorf("ADD through a planted directory link: exit %d %s; want code 7", add.Exit, add.Stdout)
				}
			}
			v.unchanged(t, tt.name)
		})
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// Another local user who owns a directory below the data directory (made
// before root did, or given to them), or a data directory others may
// write, could plant links there at any moment: every command is refused
// (code 7 naming the directory) before anything below it is opened.
func TestForeignDirectories(t *testing.T) {
	u := newLocalUser(t)
	type where func(dataDir, state, idx string) string
	tests := []struct {
		name       string
		standalone bool
		dir        where
		mode       os.FileMode // 0: owned by the user, 0755
	}{
		{name: "data directory", dir: func(dataDir, _, _ string) string { return dataDir }},
		{name: "data directory writable by others", dir: func(dataDir, _, _ string) string { return dataDir }, mode: 0o777 | os.ModeSticky},
		{name: "data directory writable by its group", dir: func(dataDir, _, _ string) string { return dataDir }, mode: 0o775},
		{name: "_pools", dir: func(_, state, _ string) string { return filepath.Dir(state) }},
		{name: "pool directory", dir: func(_, state, _ string) string { return state }},
		{name: "network directory", standalone: true, dir: func(_, state, _ string) string { return state }},
		{name: "_index", dir: func(_, _, idx string) string { return filepath.Dir(idx) }},
		{name: "index directory", dir: func(_, _, idx string) string { return idx }},
		{name: "_sticky", dir: func(_, state, _ string) string { return filepath.Join(state, "_sticky") }},
		{name: "_sticky writable by others", dir: func(_, state, _ string) string { return filepath.Join(state, "_sticky") }, mode: 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVictim(t)
			dataDir := reachableDir(t)
			s := plantedSetup(dataDir, tt.standalone)
			state := s.stateOf(dataDir)
			idx := filepath.Join(filepath.Dir(state), "_index", filepath.Base(state))
			dir := tt.dir(dataDir, state, idx)
			// The user's directory, with what they would plant in it.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"lock", "stamp", "b00", ".tmp", "10.211.60.2", "10.211.61.2", "last_reserved_ip.0"} {
				plantLink(t, filepath.Join(dir, name), v.file)
				if tt.mode == 0 {
					if err := os.Lchown(filepath.Join(dir, name), u.uid, u.gid); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.mode != 0 {
				if err := os.Chmod(dir, tt.mode); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Chown(dir, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
			r := testbin.Run(stickyCall(s, "ADD", "c1", "eth0", "k/1"))
			if e := r.Err(); e == nil || e.Code != 7 || !strings.Contains(e.Details, dir+" ") {
				t.Errorf("ADD: exit %d %s; want code 7 naming %s", r.Exit, r.Stdout, dir)
			}
			// DEL of an attachment that holds nothing may succeed without
			// looking below the directory; it never goes through it.
			r = testbin.Run(stickyCall(s, "DEL", "c1", "eth0", "k/1"))
			if e := r.Err(); r.Exit != 0 && (e.Code != 7 || !strings.Contains(e.Details, dir+" ")) {
				t.Errorf("DEL: exit %d %s; want success or code 7 naming %s", r.Exit, r.Stdout, dir)
			}
			v.unchanged(t, tt.name)
		})
	}
}
