package hostlocal

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/alloc/alloctest"
	"github.com/cniplugins/cniplugins/internal/cnierr"
)

// Open refuses a directory of its tree that is a link or that group or
// others may write (code 7 naming it), and leaves the lock 0600 and the
// index the owner's, whatever mode an earlier writer gave the lock.
func TestOpenSafeDirs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "net")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, lockName), nil, 0o644); err != nil { // host-local's
		t.Fatal(err)
	}
	closeT(t, openT(t, dir))
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, lockName):            0o600,
		filepath.Join(base, "_index"):           0o700 | os.ModeDir,
		IndexDir(dir):                           0o700 | os.ModeDir,
		filepath.Join(IndexDir(dir), stampName): 0o600,
	} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", path, fi.Mode(), err, want)
		}
	}

	refused := func(what, path string) {
		t.Helper()
		_, err := Open(dir, time.Second)
		alloctest.AssertCode(t, err, cnierr.CodeInvalidConfig)
		if d := cnierr.As(err).Details; !strings.HasPrefix(d, path+" ") {
			t.Errorf("%s: details %q do not name %s", what, d, path)
		}
	}
	if err := os.Chmod(base, 0o775); err != nil {
		t.Fatal(err)
	}
	refused("group-writable parent", base)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	idx := IndexDir(dir)
	if err := os.Rename(idx, idx+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(idx)+".real", idx); err != nil {
		t.Fatal(err)
	}
	refused("index directory a link", idx)
}

// A FIFO planted where the store reads a small file (a reservation, a
// cursor) is an I/O error at once: never an open that waits for a writer.
func TestReadFileRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	ip := netip.MustParseAddr("203.0.113.7")
	for name, read := range map[string]func() error{
		ip.String(): func() error { _, _, err := newStateDir(dir).Owner(ip); return err },
		"last_reserved_ip.0": func() error {
			_, err := readCursor(filepath.Join(dir, "last_reserved_ip.0"), 0)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- read() }()
			select {
			case err := <-done:
				if !errors.Is(err, errNotRegular) || cnierr.Code(err) != cnierr.CodeIO {
					t.Fatalf("reading a FIFO: %v (code %d), want %d: not a regular file", err, cnierr.Code(err), cnierr.CodeIO)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("reading a FIFO blocked")
			}
		})
	}
}

// Open and Examine judge a state directory by the same check: a symlinked
// or foreign-owned one is code 7 naming it from both, so fsck reports
// what a plugin would refuse with the code a plugin would give.
func TestOpenAndExamineRefuseAlike(t *testing.T) {
	for what, plant := range map[string]func(t *testing.T, dir string){
		"symbolic link": func(t *testing.T, dir string) {
			closeT(t, openT(t, dir+".real"))
			if err := os.Symlink(filepath.Base(dir)+".real", dir); err != nil {
				t.Fatal(err)
			}
		},
		"foreign owner": func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a directory to another user needs root")
			}
			closeT(t, openT(t, dir))
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(what, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "net")
			plant(t, dir)
			_, oerr := Open(dir, time.Second)
			_, eerr := Examine(dir, time.Second)
			for name, err := range map[string]error{"Open": oerr, "Examine": eerr} {
				alloctest.AssertCode(t, err, cnierr.CodeInvalidConfig)
				if d := cnierr.As(err).Details; !strings.HasPrefix(d, dir+" ") {
					t.Errorf("%s: details %q do not name %s", name, d, dir)
				}
			}
		})
	}
}

// Examine never creates: a missing state directory is code 5 that still
// reads as a missing file.
func TestExamineMissingDir(t *testing.T) {
	_, err := Examine(filepath.Join(t.TempDir(), "net"), time.Second)
	alloctest.AssertCode(t, err, cnierr.CodeIO)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v, want os.ErrNotExist", err)
	}
}

// A listing refuses what Open refuses with Open's code: a link where a
// directory belongs is code 7, a file there code 5 (a mistake, not an
// attack), each naming the path.
func TestReadDirRefusesAsOpen(t *testing.T) {
	base := t.TempDir()
	real, link, file := filepath.Join(base, "real"), filepath.Join(base, "link"), filepath.Join(base, "file")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	uid := os.Geteuid()
	for path, code := range map[string]uint{link: cnierr.CodeInvalidConfig, file: cnierr.CodeIO} {
		_, lerr := readDirIfAny(path, uid)
		_, cerr := checkDir(path, uid)
		for name, err := range map[string]error{"readDirIfAny": lerr, "checkDir": cerr} {
			alloctest.AssertCode(t, err, code)
			if e := cnierr.As(err); e == nil || !strings.Contains(e.Msg+" "+e.Details, path) {
				t.Errorf("%s(%s): %v does not name the path", name, path, err)
			}
		}
	}
}
