package hostlocal

import (
	"os"
	"path/filepath"
	"strings"
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
		indexDir(dir):                           0o700 | os.ModeDir,
		filepath.Join(indexDir(dir), stampName): 0o600,
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
	idx := indexDir(dir)
	if err := os.Rename(idx, idx+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(idx)+".real", idx); err != nil {
		t.Fatal(err)
	}
	refused("index directory a link", idx)
}
