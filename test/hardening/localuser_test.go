package hardening

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// localUser is an unprivileged user of the machine, created for one test
// and removed after it: the other local users of the threat model.
type localUser struct {
	name     string
	uid, gid int
}

// newLocalUser creates the user (useradd; root only, which CI is).
func newLocalUser(t *testing.T) localUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: creating an unprivileged user to attack with needs root")
	}
	// Unique per process and test, at most 32 characters (useradd's limit).
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	name := fmt.Sprintf("cnisec%d-%08x", os.Getpid()%1000000, h.Sum32())
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return localUser{name: name, uid: uid, gid: gid}
}

// command is name args... run as u.
func (u localUser) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}, Setpgid: true}
	return cmd
}

// stop kills cmd (started by command) and everything it started: the
// user cannot be removed while any of its processes lives.
func stop(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// reachableDir is a new directory that every user may traverse and read
// but only root may change (0755 up to /tmp), like /var/lib/cni/networks.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
