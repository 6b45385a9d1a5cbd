package hardening

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// lockHolder is an unprivileged user's `flock -x` on path: held reports
// whether it got the lock (flock prints only once it holds it, and exits
// at once when it cannot open the file), so nothing here waits on a clock.
func lockHolder(t *testing.T, u localUser, path string) (held bool) {
	t.Helper()
	cmd := u.command("flock", "-x", path, "-c", "echo held; exec sleep 600")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(cmd) })
	line, _ := bufio.NewReader(out).ReadString('\n')
	return line == "held\n"
}

// Another local user cannot stall allocation: a pool's lock (created
// 0600, and made 0600 when host-local or an older version left it 0644)
// cannot be opened, so not flock'ed, by anyone but root, and ADD and DEL
// go through (lockTimeout 1s: held, they would fail with 11). The files
// only the plugin reads are root's alone; reservations and cursors keep
// host-local's 0644.
func TestLockNotHoldableByOthers(t *testing.T) {
	u := newLocalUser(t)
	dataDir := reachableDir(t)
	// pool "old" is a directory host-local or an older version made: its
	// lock is 0644.
	oldDir := filepath.Join(dataDir, "_pools", "old")
	if err := os.MkdirAll(oldDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(oldDir, "lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, pool := range []string{"fresh", "old"} {
		s := chainSetup(dataDir, "locknet-"+pool, pool, fmt.Sprintf("10.211.%d.0/24", 50+i), `,"lockTimeout":"1s"`)
		dir := s.stateOf(dataDir)
		id := "lk-" + pool
		// Created by the first ADD (fresh), or mended by it (old).
		first := testbin.MustSucceed(t, call(s.plugin, "ADD", id+"-0", s.conf("")))
		if lockHolder(t, u, filepath.Join(dir, "lock")) {
			t.Errorf("%s: user %s holds the pool's lock", pool, u.name)
		}
		r := testbin.Run(call(s.plugin, "ADD", id, s.conf("")))
		if r.Exit != 0 {
			t.Fatalf("%s: ADD while another user tried the lock: exit %d %s", pool, r.Exit, r.Stdout)
		}
		del := call(s.plugin, "DEL", id+"-0", withPrevResult(t, s.conf(""), first.Stdout))
		testbin.MustSucceed(t, del)

		want := map[string]fs.FileMode{
			"lock": 0o600, firstAddr(t, r.Stdout): 0o644, "last_reserved_ip.0": 0o644,
			"../_index": 0o700 | fs.ModeDir, "../_index/" + pool: 0o700 | fs.ModeDir,
			"../_index/" + pool + "/stamp": 0o600, "../_index/" + pool + "/b00": 0o600,
		}
		for name, mode := range want {
			fi, err := os.Lstat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != mode {
				t.Errorf("%s: %s has mode %v, want %v", pool, name, fi.Mode(), mode)
			}
		}
	}
}

// withPrevResult is conf with prevResult set to an ADD's result.
func withPrevResult(t *testing.T, conf, result []byte) []byte {
	t.Helper()
	return append(conf[:len(conf)-1], fmt.Appendf(nil, `,"prevResult":%s}`, result)...)
}

// A plugin run by an unprivileged user (a rootless runtime) allocates in a
// data directory of its own as root's does in root's: the directories it
// checks are that user's, and what it creates is the user's alone.
func TestRootlessDataDir(t *testing.T) {
	u := newLocalUser(t)
	// The installed binary must be reachable by the user: its bin dir's
	// parent is a private temporary directory of root's.
	if err := os.Chmod(filepath.Dir(binDir), 0o755); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(reachableDir(t), "user")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dataDir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	s := chainSetup(dataDir, "rootless", "r", "10.211.52.0/24", "")
	c := call(s.plugin, "ADD", "rootless-1", s.conf(""))
	cmd := u.command(filepath.Join(binDir, c.Plugin))
	cmd.Env, cmd.Stdin = c.Environ(), bytes.NewReader(c.Stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ADD as %s: %v\n%s", u.name, err, out)
	}
	lock, err := os.Lstat(filepath.Join(s.stateOf(dataDir), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	if st := lock.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid || lock.Mode() != 0o600 {
		t.Errorf("lock: owner %d mode %v; want %d, 0600", st.Uid, lock.Mode(), u.uid)
	}
	if addr := firstAddr(t, out); !strings.HasPrefix(addr, "10.211.52.") {
		t.Errorf("ADD as %s: %s", u.name, addr)
	}
}
