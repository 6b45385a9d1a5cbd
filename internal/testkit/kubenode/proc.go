package kubenode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is one daemon of the cluster, logging to a file of its own.
type proc struct {
	name, log string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// startProc starts bin with args, its output appended to dir/name.log, in
// a process group of its own (so a test's ^C does not reach it before
// Stop does), and killed if the test process dies without stopping it (a
// go test -timeout panic): a kubelet left running would go on changing
// the host.
func startProc(dir, name, bin string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(dir, name+".log")}
	f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.exited = make(chan struct{})
	cmd, exited := p.cmd, p.exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return p, nil
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// kill sends SIGKILL and waits.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
