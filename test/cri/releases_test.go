package cri

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/kubenode"
)

// release is one containerd release every case runs on, with the CNI bin
// dir it execs plugins from: the installed binary beside the upstream
// plugins (bridge, loopback, host-local) that this release's conflist
// works with.
type release struct {
	label string // "containerd 1.6.20~ds1", from its --version: names every subtest
	short string // "1.6" or "2.4": subtest names and bridge/network suffixes
	dir   string // holds its containerd, ctr and containerd-shim-runc-v2; "" = on PATH
	// cniBin is the CNI bin dir; upstream is where its upstream plugins
	// come from.
	cniBin, upstream string
	// config is the config.toml template (see containerdConfig).
	config string
}

// Where scripts/test-deps.sh builds containerd 2.x and upstream plugins
// that speak spec 1.1.0 (Debian 12's 1.1.1 stop at 1.0.0).
const (
	containerd2Dir = kubenode.ContainerdDir
	plugins2Dir    = kubenode.PluginsDir
)

// releases finds both releases and installs a CNI bin dir for each under
// root: Debian's containerd 1.6 with Debian's plugins, and containerd 2.x
// with upstream plugins v1.9.1.
func releases(root, bin string) ([]*release, error) {
	rels := []*release{
		{short: "1.6", upstream: "/usr/lib/cni", config: configV2},
		{short: "2.4", dir: containerd2Dir, upstream: plugins2Dir, config: configV3},
	}
	for _, r := range rels {
		for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
			if _, err := exec.LookPath(r.bin(b)); err != nil {
				return nil, fmt.Errorf("%s missing: run scripts/test-deps.sh (Debian packages containerd and runc; containerd 2.x is built into %s): %w", r.bin(b), containerd2Dir, err)
			}
		}
		out, err := exec.Command(r.bin("containerd"), "--version").Output()
		if f := strings.Fields(string(out)); err != nil || len(f) < 3 {
			return nil, fmt.Errorf("%s --version: %v: %s", r.bin("containerd"), err, out)
		} else {
			v, _, _ := strings.Cut(strings.TrimPrefix(f[2], "v"), "+") // a module build says 2.4.2+unknown
			r.label = "containerd " + v
		}
		r.cniBin = filepath.Join(root, "bin-"+r.short)
		if err := testkit.Install(bin, r.cniBin); err != nil {
			return nil, err
		}
		if err := r.linkUpstream("bridge", "loopback", "host-local"); err != nil {
			return nil, err
		}
	}
	return rels, nil
}

// bin is the path of one of the release's programs.
func (r *release) bin(name string) string {
	if r.dir == "" {
		return name
	}
	return filepath.Join(r.dir, name)
}

// env is the daemon's environment: the release's own directory first on
// PATH, where containerd looks for its shim.
func (r *release) env(extra ...string) []string {
	env := os.Environ()
	if r.dir != "" {
		for i, kv := range env {
			if strings.HasPrefix(kv, "PATH=") {
				env[i] = "PATH=" + r.dir + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
	}
	return append(env, extra...)
}

// linkUpstream puts the upstream plugins into the bin dir: containerd
// execs every plugin from its one bin dir, and sets up the pod's loopback
// with the loopback plugin itself.
func (r *release) linkUpstream(names ...string) error {
	for _, n := range names {
		src := filepath.Join(r.upstream, n)
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("%s missing: run scripts/test-deps.sh (Debian package containernetworking-plugins; plugins v1.9.1 are built into %s): %w", src, plugins2Dir, err)
		}
		if err := os.Symlink(src, filepath.Join(r.cniBin, n)); err != nil {
			return err
		}
	}
	return nil
}

// configV2 is containerd 1.6's config (version 2). Arguments: root, state,
// socket, ttrpc socket, sandbox image, CNI bin dir, CNI conf dir. runc in
// this sandbox cannot use cgroups, AppArmor or raise the OOM score; netns
// mounts go under the private state dir, not /var/run.
const configV2 = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  disable_cgroup = true
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
`

// configV3 is containerd 2.x's (version 3), the Kubernetes node's: the
// same arguments as configV2's.
const configV3 = kubenode.ContainerdConfig
