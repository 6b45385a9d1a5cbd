package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// netnsPath is what CNI_NETNS says. IPAM plugins never enter it.
const netnsPath = "/var/run/netns/cniplugins-bench"

// call is one plugin invocation, made exactly as a CNI runtime makes it:
// one process, CNI_* in a clean environment, the config on stdin.
type call struct {
	path    string // the executable (a personality's symlink, host-local, the floor)
	command string
	cid     string
	ifname  string
	cniPath string
	stdin   []byte
	env     []string // extra variables, e.g. GODEBUG
}

// outcome is what one invocation did and cost.
type outcome struct {
	dur            time.Duration // fork+exec to reaped, as the runtime sees it
	stdout, stderr []byte
	exit           int
	maxrss         int64         // KiB, the child's wait4 rusage (see rss.go for its caveat)
	cpu            time.Duration // user+system CPU of the child and the children it waited for
}

func (c call) environ() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"CNI_COMMAND=" + c.command,
		"CNI_CONTAINERID=" + c.cid,
		"CNI_NETNS=" + netnsPath,
		"CNI_IFNAME=" + c.ifname,
		"CNI_PATH=" + c.cniPath,
	}
	return append(env, c.env...)
}

func (c call) cmd() (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(c.path)
	cmd.Env = c.environ()
	cmd.Stdin = bytes.NewReader(c.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// run execs c and times it from just before the fork to just after the
// child is reaped and its output collected.
func run(c call) outcome {
	cmd, out, errb := c.cmd()
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	return finish(c, cmd, out, errb, err, d)
}

func finish(c call, cmd *exec.Cmd, out, errb *bytes.Buffer, err error, d time.Duration) outcome {
	o := outcome{dur: d, stdout: out.Bytes(), stderr: errb.Bytes()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.exit = ee.ExitCode()
	case err != nil:
		o.exit = -1
		o.stderr = append(o.stderr, err.Error()...)
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			o.maxrss = ru.Maxrss
			o.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return o
}

// check turns a failed invocation into an error that shows everything.
func (o outcome) check(c call) error {
	if o.exit == 0 {
		return nil
	}
	return fmt.Errorf("%s %s (container %s): exit %d\nstdout: %s\nstderr: %s",
		c.path, c.command, c.cid, o.exit, o.stdout, o.stderr)
}

// mustRun runs c and fails unless it exits 0.
func mustRun(c call) (outcome, error) {
	o := run(c)
	return o, o.check(c)
}
