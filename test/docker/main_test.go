// Package docker runs the full flavour's docker-ipam driver under a real,
// private dockerd (Debian's docker.io 20.10): networks created with every
// IPAM option dockerd passes to a remote driver, containers run on them,
// the driver restarted mid-way, and one pool shared with CNI ADDs of the
// real ipam-da-pools.
package docker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testdockerd"
)

// The package's fixture: one dockerd, one driver, one bin dir. Subnets
// stay inside 10.213.0.0/16 and fd00:213::/48; Docker networks and their
// bridges are named cnpd-*.
var (
	unusable error // why no private dockerd can run here
	daemon   *testdockerd.Daemon
	drv      *driver
	binDir   string
	dataDir  string
	image    = "cnpd-busybox"
)

// config: "shared" is the pool a Docker network and CNI ADDs share;
// "named" is bound by --ipam-opt; the default address pools feed networks
// created without --subnet.
const config = `{
  "poolDefinitions": {
    "shared": [{"subnet": "10.213.1.0/24"}],
    "named": [{"subnet": "10.213.2.0/24", "rangeStart": "10.213.2.10", "rangeEnd": "10.213.2.50"}]
  },
  "defaultAddressPools": [
    {"base": "10.213.128.0/20", "size": 24},
    {"base": "fd00:213:8000::/52", "size": 64}
  ]
}`

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if err := testdockerd.Usable(); err != nil {
		unusable = fmt.Errorf("no private dockerd possible here: %w", err)
		fmt.Fprintln(os.Stderr, unusable)
		return m.Run()
	}
	root, err := os.MkdirTemp("", "cnpd-docker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	if err := setUp(root); err != nil {
		fmt.Fprintln(os.Stderr, "set-up:", err)
		tearDown()
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- driver log:\n%s\n", drv.log())
	}
	tearDown()
	return code
}

func setUp(root string) error {
	bin, err := testkit.Build(root, "full")
	if err != nil {
		return err
	}
	binDir = filepath.Join(root, "cni-bin")
	if err := testkit.Install(bin, binDir); err != nil {
		return err
	}
	dataDir = filepath.Join(root, "data")
	cfg := filepath.Join(root, "driver.json")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return err
	}
	if daemon, err = testdockerd.Start("", "cnpd-dockerd-"); err != nil {
		return err
	}
	if err := daemon.ImportBusybox(image); err != nil {
		return err
	}
	name := "cnpd-" + strconv.Itoa(os.Getpid())
	drv = &driver{
		bin:    filepath.Join(binDir, "cniplugins"),
		name:   name,
		socket: filepath.Join(testdockerd.PluginDir, name+".sock"),
		config: cfg,
		logf:   filepath.Join(root, "driver.log"),
	}
	return drv.start()
}

func tearDown() {
	if daemon != nil {
		daemon.Clean() // containers and networks go while the driver still answers
	}
	if drv != nil {
		drv.stop(syscall.SIGKILL)
		_ = os.Remove(drv.socket)
	}
	if daemon != nil {
		daemon.Stop() // last: it removes /run/docker/plugins if it made it
	}
}

// needDocker stops a test without a private dockerd: a failure as root,
// where scripts/test-deps.sh installed it, a skip otherwise. Tests that only add
// networks and containers of their own run in parallel; the one that
// restarts the driver and dockerd runs alone (Go runs the sequential
// tests before releasing the parallel ones).
func needDocker(t *testing.T) {
	t.Helper()
	testkit.NeedComponent(t, unusable)
}

// driver is the docker-ipam process under test.
type driver struct {
	bin, name, socket, config, logf string
	cmd                             *exec.Cmd
	exited                          chan error
}

func (d *driver) start() error {
	logf, err := os.OpenFile(d.logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	d.cmd = exec.Command(d.bin, "docker-ipam", "--socket", d.socket, "--config", d.config, "--data-dir", dataDir)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	d.exited = make(chan error, 1)
	go func() { d.exited <- d.cmd.Wait(); logf.Close() }()
	return testdockerd.WaitSocket(d.socket, 10*time.Second)
}

// stop signals the driver and returns how it exited.
func (d *driver) stop(sig syscall.Signal) error {
	if d.cmd == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case err := <-d.exited:
		d.cmd = nil
		return err
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		err := <-d.exited
		d.cmd = nil
		return fmt.Errorf("driver ignored %v: %v", sig, err)
	}
}

func (d *driver) log() string {
	b, _ := os.ReadFile(d.logf)
	return string(b)
}
