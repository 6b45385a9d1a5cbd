package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// fsck's exit status tells "problems found" (1) from "could not check"
// (2), so that a monitor can tell a broken node from a broken check.
func TestOpsFsckExitStatus(t *testing.T) {
	l := newOpsLab(t)
	l.network("10-fx.conflist", "fx", `{"type":"ipam-da-pools","dataDir":"DATA","ranges":[[{"subnet":"10.82.0.0/24"}]]}`)
	l.mustAdd("fx", "c1", "eth0")
	fsck := func(want int, args ...string) testbin.Reply {
		t.Helper()
		r := cliRun(append([]string{"fsck"}, args...)...)
		if r.Exit != want {
			t.Fatalf("fsck %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Exit, want, r.Stdout, r.Stderr)
		}
		return r
	}

	fsck(0, "--data-dir", l.dataDir)
	// Could not run: a missing data dir, a bad flag, a bad -o.
	fsck(2, "--data-dir", filepath.Join(l.root, "no-such-dir"))
	fsck(2, "--data-dir", l.dataDir, "--bogus")
	fsck(2, "--data-dir", l.dataDir, "-o", "yaml")

	// Could not check everything: a state directory's lock held past
	// --lock-timeout (as by a plugin stuck mid-ADD).
	lock, err := os.OpenFile(filepath.Join(l.dataDir, "fx", "lock"), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if r := fsck(2, "--data-dir", l.dataDir, "--lock-timeout", "200ms"); !strings.Contains(string(r.Stderr), "lock") {
		t.Errorf("fsck under a held lock: %s", r.Stderr)
	}
	lock.Close()

	// Problems found and not repairable (a garbage reservation is never
	// deleted): 1, with --repair too.
	writeFile(t, filepath.Join(l.dataDir, "fx", "10.82.0.200"), "\x00garbage")
	fsck(1, "--data-dir", l.dataDir)
	fsck(1, "--data-dir", l.dataDir, "--repair")
	if r := cliRun("release", "--data-dir", l.dataDir, "10.82.0.200", "--network", "fx"); r.Exit != 0 {
		t.Fatalf("release of the garbage: %s %s", r.Stdout, r.Stderr)
	}
	// A problem that --repair fixes: 1 before, 0 after the repair.
	writeFile(t, filepath.Join(l.dataDir, "_index", "fx", ".tmpw-old"), "10.82.0.3")
	fsck(1, "--data-dir", l.dataDir)
	fsck(0, "--data-dir", l.dataDir, "--repair")
	fsck(0, "--data-dir", l.dataDir)
}
