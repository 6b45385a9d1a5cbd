package kubenode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
	"github.com/cniplugins/cniplugins/internal/testkit/hostclean"
)

// ContainerdConfig is containerd 2.x's config.toml (version 3), for the
// node and for test/cri's daemons. Arguments: root, state, socket, ttrpc
// socket, sandbox image, CNI bin dir, CNI conf dir. Root in this sandbox
// cannot raise a process's OOM score (no CAP_SYS_RESOURCE) nor use
// AppArmor; netns mounts go under the private state dir, and runc keeps
// its state there too, apart from any other runc of the host. The CRI's
// keys live under io.containerd.cri.v1.runtime and .images; the native
// snapshotter needs an unpack_config entry, or ctr images import finds no
// platform to unpack for. NRI is off: its socket is one fixed path for
// every daemon.
const ContainerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.erofs", "io.containerd.snapshotter.v1.blockfile"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "native"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q
[plugins."io.containerd.cri.v1.runtime"]
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      snapshotter = "native"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        Root = "%[2]s/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[6]q]
    conf_dir = %[7]q
[plugins."io.containerd.transfer.v1.local"]
  [[plugins."io.containerd.transfer.v1.local".unpack_config]]
    platform = "linux/amd64"
    snapshotter = "native"
`

func (n *Node) containerdDir() string { return filepath.Dir(n.ContainerdSock) }

func (n *Node) startContainerd(ctx context.Context) error {
	dir := n.containerdDir()
	conf := fmt.Sprintf(ContainerdConfig, filepath.Join(dir, "root"), filepath.Join(dir, "state"), n.ContainerdSock,
		n.ContainerdSock+".ttrpc", PauseImage, n.CNIBin, n.NetDir)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	if err := n.RestartContainerd(ctx); err != nil {
		return err
	}
	pause, err := ctrimage.Pause(n.Root, PauseImage)
	if err != nil {
		return err
	}
	return n.Import(ctx, pause)
}

// RestartContainerd starts the runtime (again, after KillContainerd) on
// the same root and state, and waits until it answers.
func (n *Node) RestartContainerd(ctx context.Context) error {
	p, err := startProc(n.Root, "containerd", filepath.Join(ContainerdDir, "containerd"),
		// containerd finds its shim on PATH.
		[]string{"PATH=" + ContainerdDir + ":" + os.Getenv("PATH")},
		"--config", filepath.Join(n.containerdDir(), "config.toml"))
	if err != nil {
		return err
	}
	n.containerd = p
	return poll(ctx, 30*time.Second, "containerd's CRI", func() error {
		if !p.running() {
			return fmt.Errorf("containerd exited: %s", p.tail(2000))
		}
		_, err := n.ctr(ctx, "version")
		return err
	})
}

// KillContainerd SIGKILLs the runtime and every shim it started, as a
// node's crash would: the pods' processes die, their networks stay.
func (n *Node) KillContainerd() {
	n.containerd.kill()
	hostclean.KillShims(n.ContainerdSock)
}

// Import loads an image archive (docker-archive or OCI layout) into the
// CRI's namespace, for pods with imagePullPolicy Never or IfNotPresent.
func (n *Node) Import(ctx context.Context, archive string) error {
	_, err := n.ctr(ctx, "images", "import", "--snapshotter", "native", "--all-platforms", archive)
	return err
}

func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(ContainerdDir, "ctr"), append([]string{"-a", n.ContainerdSock, "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// stopContainerd removes every pod sandbox through the CRI (so each
// network is deleted by its own CNI DEL), then stops the daemon and
// whatever it left behind.
func (n *Node) stopContainerd() {
	if n.containerd == nil {
		return
	}
	if n.containerd.running() {
		removeSandboxes(n.ContainerdSock)
	}
	n.containerd.stop(15 * time.Second)
	hostclean.KillShims(n.ContainerdSock)
	hostclean.UnmountUnder(n.containerdDir())
}

func removeSandboxes(sock string) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return
	}
	for _, s := range l.Items {
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
		_, _ = rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
	}
}

// poll calls f until it succeeds, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready in %s: %w", what, timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
