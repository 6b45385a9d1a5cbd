package cri

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/cniplugins/cniplugins/internal/testkit/hostclean"
)

// containerd is one private containerd daemon and a CRI client to it.
type containerd struct {
	rel                      *release
	env                      []string // the daemon's extra environment
	net                      network
	root, sock, confDir, log string
	cmd                      *exec.Cmd
	exited                   chan struct{} // closed once cmd has exited and been waited for
	conn                     *grpc.ClientConn
	rt                       runtimeapi.RuntimeServiceClient
}

// pauseImage is the sandbox image: a static pause binary imported with
// ctr, so containerd never pulls (there is no registry to pull from).
const pauseImage = "docker.io/cnpcri/pause:1"

// startContainerd starts a daemon of release rel under root whose one
// network is n with the given ipam section; env is added to its
// environment (containerd passes its own to every plugin it execs).
func startContainerd(root string, rel *release, n network, ipam string, env ...string) (*containerd, error) {
	n.dataDir = filepath.Join(root, "ipam")
	c := &containerd{
		rel: rel, env: env, net: n, root: root, sock: filepath.Join(root, "c.sock"), confDir: filepath.Join(root, "net.d"),
		log: filepath.Join(root, "containerd.log"),
	}
	if err := os.MkdirAll(c.confDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeNetwork(c.confDir, n, ipam); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(rel.config, filepath.Join(root, "root"), filepath.Join(root, "state"), c.sock, c.sock+".ttrpc", pauseImage, rel.cniBin, c.confDir)
	if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	if err := c.launch(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// launch starts the daemon, dials its CRI and waits until it answers.
func (c *containerd) launch() error {
	if err := c.start(); err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+c.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	c.conn, c.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
	return c.ready()
}

// start runs the daemon; ready waits until its CRI answers.
func (c *containerd) start() error {
	logf, err := os.OpenFile(c.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	c.cmd = exec.Command(c.rel.bin("containerd"), "--config", filepath.Join(c.root, "config.toml"))
	c.cmd.Env = c.rel.env(c.env...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.rel.label, err)
	}
	exited, cmd := make(chan struct{}), c.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	c.exited = exited
	return nil
}

func (c *containerd) ready() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited at start-up; its log: %s", c.rel.label, c.tail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s's CRI did not answer in 30s; its log: %s", c.rel.label, c.tail())
}

// restart starts the daemon again on the same root and state.
func (c *containerd) restart() error {
	if err := c.start(); err != nil {
		return err
	}
	return c.ready()
}

// reset gives the tests after a crash a daemon as if new: same network,
// same IPAM data dir, but a fresh root and state. containerd 1.6's native
// snapshotter renames a new snapshot's directory into place before it
// commits the snapshot's ID, so a SIGKILL in between leaves a directory
// whose ID the restarted daemon hands out again, and the next sandbox
// fails with "file exists".
func (c *containerd) reset() error {
	c.stop()
	for _, dir := range []string{"root", "state"} {
		if err := os.RemoveAll(filepath.Join(c.root, dir)); err != nil {
			return err
		}
	}
	if err := c.launch(); err != nil {
		return err
	}
	return c.importImage(pauseTar)
}

// kill SIGKILLs the daemon (its shims, and so the pods, live on).
func (c *containerd) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.exited
	}
	c.cmd = nil
}

// stop removes every pod sandbox, stops the daemon, kills what it left
// (shims) and unmounts whatever is still mounted under the root.
func (c *containerd) stop() {
	if c.rt != nil && c.cmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
			for _, s := range l.Items {
				_, _ = c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
				_, _ = c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
			}
		}
		cancel()
	}
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.exited
		}
	}
	if c.conn != nil {
		_ = c.conn.Close()
	}
	hostclean.KillShims(c.sock)
	hostclean.UnmountUnder(c.root)
	// The bridge plugin made the bridge; nothing else uses its name.
	_ = exec.Command("ip", "link", "del", c.net.bridge).Run()
}

func (c *containerd) tail() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
