// Package hostclean undoes what a test's private container runtime leaves
// on the host when it is stopped or killed: its shims and its mounts.
package hostclean

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// KillShims SIGKILLs the containerd shims started for the daemon whose
// socket is sock: their command line names it.
func KillShims(sock string) {
	kill(func(cmdline string) bool {
		return strings.Contains(cmdline, "containerd-shim") && strings.Contains(cmdline, sock)
	})
}

// KillUnder SIGKILLs every process whose command line names a path under
// dir: what a runtime rooted there left running (podman's conmon and its
// "container cleanup", which outlive `podman rm` by a moment and write
// under the root while they do).
func KillUnder(dir string) {
	kill(func(cmdline string) bool { return strings.Contains(cmdline, dir+"/") })
}

func kill(match func(cmdline string) bool) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !match(string(b)) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid); err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// UnmountUnder detaches every mount below dir, deepest first.
func UnmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mounts[i], syscall.MNT_DETACH)
	}
}
