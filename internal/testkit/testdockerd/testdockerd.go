// Package testdockerd runs a private dockerd for the tests and the
// benchmark of the Docker IPAM driver: its own data root, exec root,
// socket and pid file under one temporary directory, no iptables, no
// default bridge, the vfs storage driver, and nothing written outside
// that directory except what a plugin socket needs (see PluginDir).
package testdockerd

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/hostclean"
)

// Binaries: Debian's docker.io. /usr/local/bin/docker, where present, is a
// newer client only; the tests call Debian's explicitly.
const (
	Dockerd = "/usr/sbin/dockerd"
	Docker  = "/usr/bin/docker"
	busybox = "/bin/busybox"
)

// PluginDir is where dockerd looks for plugin sockets. It is fixed in
// dockerd 20.10 (pkg/plugins: /run/docker/plugins for sockets,
// /etc/docker/plugins and /usr/lib/docker/plugins for spec files) and not
// tied to --exec-root, so a private dockerd finds the test's driver only
// there: tests use a uniquely named socket in it and remove it after.
const PluginDir = "/run/docker/plugins"

// systemContainerd is the socket dockerd 20.10 uses instead of starting
// its own containerd when it exists.
const systemContainerd = "/run/containerd/containerd.sock"

// Daemon is one private dockerd.
type Daemon struct {
	Dir    string // everything of this daemon lives under it
	Socket string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
	// madeRun lists the directories under /run this daemon created
	// (dockerd creates /run/docker/plugins), removed by Stop if empty.
	madeRun []string
}

// Usable says why a private dockerd cannot run here, or nil.
func Usable() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root")
	}
	for _, b := range []string{Dockerd, Docker, busybox, "/usr/bin/containerd", "/usr/sbin/runc"} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s missing (scripts/test-deps.sh installs docker.io and busybox-static)", b)
		}
	}
	if f, err := elf.Open(busybox); err != nil {
		return fmt.Errorf("%s: %v", busybox, err)
	} else {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return fmt.Errorf("%s is dynamically linked; the test image needs busybox-static", busybox)
			}
		}
	}
	if _, err := os.Stat(systemContainerd); err == nil {
		return fmt.Errorf("a system containerd socket exists at %s: a private dockerd would use it; refusing to run", systemContainerd)
	}
	return nil
}

// Start runs a private dockerd under a new directory below parent (""
// means the system's temporary directory) and waits until it answers.
func Start(parent, prefix string) (*Daemon, error) {
	if err := Usable(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	d := &Daemon{Dir: dir, Socket: filepath.Join(dir, "docker.sock")}
	for _, p := range []string{PluginDir, filepath.Dir(PluginDir)} {
		if _, err := os.Stat(p); err != nil {
			d.madeRun = append(d.madeRun, p)
		}
	}
	cfg := filepath.Join(dir, "daemon.json")
	// Without deprecated-key-path dockerd 20.10 writes /etc/docker/key.json.
	b, _ := json.Marshal(map[string]string{"deprecated-key-path": filepath.Join(dir, "key.json")})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		d.cleanup()
		return nil, err
	}
	if d.log, err = os.Create(filepath.Join(dir, "dockerd.log")); err != nil {
		d.cleanup()
		return nil, err
	}
	if err := d.launch(); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// launch starts dockerd on d's directories and waits until it answers.
func (d *Daemon) launch() error {
	d.exited = make(chan struct{})
	d.cmd = exec.Command(Dockerd,
		"--data-root", filepath.Join(d.Dir, "data"),
		"--exec-root", filepath.Join(d.Dir, "exec"),
		"-H", "unix://"+d.Socket,
		"--pidfile", filepath.Join(d.Dir, "dockerd.pid"),
		"--iptables=false", "--ip-masq=false", "--ip-forward=false", "--bridge=none",
		"--storage-driver", "vfs",
		"--config-file", filepath.Join(d.Dir, "daemon.json"),
	)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	// Its own process group, so that Stop reaches the containerd it starts.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		return err
	}
	exited := d.exited
	go func() { _ = d.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := d.Run("version", "--format", "{{.Server.Version}}"); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("dockerd exited at start-up:\n%s", d.Log())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer within 60s:\n%s", d.Log())
		}
	}
}

// Restart stops dockerd (SIGTERM: its containers stop, its networks and
// images stay) and starts it again on the same directories.
func (d *Daemon) Restart() error {
	d.terminate()
	return d.launch()
}

// Log is the daemon's output so far (its tail, for failure messages).
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dockerd.log"))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// Run runs the docker client against this daemon and returns its
// trimmed stdout; a failure carries stderr.
func (d *Daemon) Run(args ...string) (string, error) {
	return d.RunContext(context.Background(), args...)
}

// RunContext is Run with a context.
func (d *Daemon) RunContext(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, Docker, append([]string{"-H", "unix://" + d.Socket}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.Dir, "client"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(stdout.String()), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ImportBusybox imports a one-binary image from busybox-static as name:
// /bin/busybox and a link per applet the tests use.
func (d *Daemon) ImportBusybox(name string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	hdrs := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bb))},
	}
	for _, applet := range []string{"sh", "true", "ip", "sleep", "cat", "ls"} {
		hdrs = append(hdrs, &tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Name == "bin/busybox" {
			if _, err := tw.Write(bb); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	cmd := exec.Command(Docker, "-H", "unix://"+d.Socket, "import", "-c", "ENV PATH=/bin", "-", name)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.Dir, "client"))
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docker import: %v: %s", err, out)
	}
	return nil
}

// Clean removes every container and network the daemon still has, so
// their links and bridges go (a network on a remote IPAM driver needs the
// driver for that: call Clean before stopping it).
func (d *Daemon) Clean() {
	if ids, err := d.Run("ps", "-aq"); err == nil && ids != "" {
		_, _ = d.Run(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
	}
	if ids, err := d.Run("network", "ls", "-q", "--filter", "type=custom"); err == nil && ids != "" {
		_, _ = d.Run(append([]string{"network", "rm"}, strings.Fields(ids)...)...)
	}
}

// Stop cleans up (see Clean), stops the daemon (SIGTERM, then SIGKILL of
// its process group after a grace period) and removes its directory, and
// the directories under /run it created if they are empty by then.
func (d *Daemon) Stop() {
	if d.cmd != nil && d.cmd.Process != nil {
		select {
		case <-d.exited:
		default:
			d.Clean()
			d.terminate()
		}
	}
	d.cleanup()
}

// terminate stops the daemon: SIGTERM, then SIGKILL of its whole process
// group (containerd, shims) after a grace period.
func (d *Daemon) terminate() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
}

func (d *Daemon) cleanup() {
	if d.log != nil {
		d.log.Close()
	}
	// vfs layers and container state may hold mounts under the data root.
	hostclean.UnmountUnder(d.Dir)
	_ = os.RemoveAll(d.Dir)
	for _, p := range d.madeRun {
		_ = os.Remove(p) // only if empty
	}
}

// WaitSocket waits until something accepts connections on path.
func WaitSocket(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing answers on %s after %s: %w", path, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
