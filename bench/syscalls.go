package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// syscallCount is what `strace -f -c` counted for one invocation.
type syscallCount struct {
	total, files, fsyncs int
}

// fileSyscalls are the calls that touch the state directory (or stdin and
// stdout); everything else an exec makes is the Go runtime's or the C
// library's start-up, the same for every Go binary.
var fileSyscalls = map[string]bool{
	"open": true, "openat": true, "read": true, "write": true, "pread64": true, "pwrite64": true,
	"close": true, "rename": true, "renameat": true, "renameat2": true, "link": true, "linkat": true,
	"unlink": true, "unlinkat": true, "ftruncate": true, "fsync": true, "fdatasync": true, "flock": true,
	"newfstatat": true, "fstat": true, "stat": true, "lstat": true, "mkdir": true, "mkdirat": true,
	"utimensat": true, "getdents64": true, "statx": true,
}

// measureSyscalls counts, under strace, the system calls of one ADD and
// its DEL per subject (after the untimed warm-up, so the index exists).
// strace is optional: without it the section says so.
func measureSyscalls(o *options, subs []subject, r *results) error {
	if _, err := exec.LookPath("strace"); err != nil {
		r.note("strace is not installed (apt-get install -y strace): the system-call counts are missing.")
		return nil
	}
	r.syscalls = map[string]map[string]syscallCount{}
	for _, s := range subs {
		dataDir := filepath.Join(o.tmp, "strace-"+s.key)
		r.syscalls[s.key] = map[string]syscallCount{}
		// One untimed ADD and DEL first: the first ADD in a directory
		// creates it (and ours builds its index), which no later ADD does.
		warm := containerID("strace-warm-" + s.key)
		out, err := mustRun(s.call("ADD", warm, dataDir, nil))
		if err != nil {
			return err
		}
		if _, err := mustRun(s.call("DEL", warm, dataDir, out.stdout)); err != nil {
			return err
		}
		cid := containerID("strace-" + s.key)
		var prev []byte
		for _, op := range latencyOps {
			c := s.call(op, cid, dataDir, prev)
			n, res, err := straced(o, c)
			if err != nil {
				return fmt.Errorf("%s %s under strace: %v", s.label, op, err)
			}
			r.syscalls[s.key][op] = n
			prev = res
		}
	}
	return nil
}

// straced runs c under `strace -f -c` and returns the counts and stdout.
func straced(o *options, c call) (syscallCount, []byte, error) {
	report := filepath.Join(o.tmp, "strace.out")
	cmd, out, errb := c.cmd()
	cmd.Args = append([]string{"strace", "-f", "-c", "-o", report, c.path}, cmd.Args[1:]...)
	cmd.Path = mustLookPath("strace")
	if err := cmd.Run(); err != nil {
		return syscallCount{}, nil, fmt.Errorf("%v: %s%s", err, out, errb)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return syscallCount{}, nil, err
	}
	return parseStraceSummary(b), out.Bytes(), nil
}

func mustLookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return name
	}
	return p
}

// parseStraceSummary reads strace -c's table: "% time seconds usecs/call
// calls [errors] syscall" rows, then a "total" row.
func parseStraceSummary(b []byte) syscallCount {
	var n syscallCount
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || strings.HasPrefix(f[0], "-") || f[0] == "%" {
			continue
		}
		calls, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		name := f[len(f)-1]
		switch {
		case name == "total":
			n.total = calls
		case fileSyscalls[name]:
			n.files += calls
			if name == "fsync" || name == "fdatasync" {
				n.fsyncs += calls
			}
		}
	}
	return n
}
