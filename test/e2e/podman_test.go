package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/hostclean"
)

// podman is Debian's podman, run against a world of its own: storage,
// run state, temp dir, CNI network configs and IPAM state all under one
// temporary directory, with the CNI backend reading our installed bin dir
// before Debian's plugins. Nothing of the host's podman set-up is read.
// What podman still writes outside that directory, at fixed paths no
// setting moves: containers/image's blob-info cache
// (/var/lib/containers/cache), runc's state (/run/runc), the netns mount
// (/run/netns) and libcni's result cache (/var/lib/cni/results); the last
// three only while a container lives.
type podman struct {
	t       *testing.T
	dir     string
	network string
	dataDir string
	env     []string
}

// podmanImage is the one image the test uses: busybox-static imported as a
// root file system, so no registry is ever contacted.
const podmanImage = "localhost/cnpa-busybox:latest"

func newPodman(t *testing.T) *podman {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING podman test: it needs root (podman with CNI networking, bridges)")
	}
	for _, bin := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s missing: run scripts/test-deps.sh (Debian packages podman, runc): %v", bin, err)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Fatalf("/bin/busybox missing: run scripts/test-deps.sh (Debian package busybox-static): %v", err)
	}
	// Short: conmon's attach socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "cnpa-pm-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t, dir: dir, network: fmt.Sprintf("cnpapm%d", os.Getpid()%100000), dataDir: filepath.Join(dir, "ipam")}
	t.Cleanup(p.cleanup)
	for _, d := range []string{"root", "runroot", "tmp", "net.d", "image/bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Podman's root defaults for a container's rlimits (nofile 1048576;
	// nproc above the 32768 podman gives conmon, hence runc) are raises of
	// the hard limits runc inherits, which need CAP_SYS_RESOURCE; where it
	// is missing (the sandbox this was written in drops it from the
	// bounding set) every run fails with "error setting rlimits for ready
	// process ... operation not permitted". The test's own nofile and a
	// modest nproc are never raises.
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "containers.conf"), fmt.Sprintf(`[containers]
default_ulimits = ["nofile=%d:%d", "nproc=4096:4096"]
[network]
network_backend = "cni"
cni_plugin_dirs = [%q, %q]
network_config_dir = %q
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = %q
tmp_dir = %q
`, nofile.Cur, nofile.Cur, installDir, upstreamDir, filepath.Join(dir, "net.d"), filepath.Join(dir, "events.log"), filepath.Join(dir, "tmp")))
	write(t, filepath.Join(dir, "storage.conf"), fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "runroot")))
	p.env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "storage.conf"), "TMPDIR="+filepath.Join(dir, "tmp"))
	return p
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs podman with args and returns stdout; it fails the test on a
// non-zero exit.
func (p *podman) run(args ...string) string {
	p.t.Helper()
	out, err := p.try(args...)
	if err != nil {
		p.t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (p *podman) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "runroot"), "--storage-driver", "vfs"}, args...)
	cmd := exec.CommandContext(ctx, "podman", full...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), nil
}

// importBusybox builds a one-binary root file system from busybox-static
// and imports it.
func (p *podman) importBusybox() {
	p.t.Helper()
	root := filepath.Join(p.dir, "image")
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), b, 0o755); err != nil {
		p.t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep", "ip"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			p.t.Fatal(err)
		}
	}
	tarball := filepath.Join(p.dir, "image.tar")
	if out, err := exec.Command("tar", "-C", root, "-cf", tarball, ".").CombinedOutput(); err != nil {
		p.t.Fatalf("tar: %v: %s", err, out)
	}
	p.run("import", tarball, podmanImage)
}

// cleanup removes every container, the bridge podman's bridge plugin
// made, anything still mounted under the test's directory, and the
// directory itself.
func (p *podman) cleanup() {
	if out, err := p.try("rm", "--all", "--force", "--time", "0"); err != nil {
		p.t.Errorf("podman rm --all: %v %s", err, out)
	}
	deleteLink(p.t, p.network)
	hostclean.KillUnder(p.dir)
	hostclean.UnmountUnder(p.dir)
	// A killed process's files go when it has exited, a moment later.
	deadline := time.Now().Add(10 * time.Second)
	for err := os.RemoveAll(p.dir); err != nil; err = os.RemoveAll(p.dir) {
		if time.Now().After(deadline) {
			p.t.Errorf("removing %s: %v", p.dir, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// address is the IPv4 address podman reports for container name on the
// test's network.
func (p *podman) address(name string) netip.Addr {
	p.t.Helper()
	var inspect []struct {
		ID              string `json:"Id"`
		NetworkSettings struct {
			Networks map[string]struct {
				IPAddress string `json:"IPAddress"`
			} `json:"Networks"`
		} `json:"NetworkSettings"`
	}
	if err := json.Unmarshal([]byte(p.run("inspect", "--type", "container", name)), &inspect); err != nil || len(inspect) != 1 {
		p.t.Fatalf("podman inspect %s: %v", name, err)
	}
	a, err := netip.ParseAddr(inspect[0].NetworkSettings.Networks[p.network].IPAddress)
	if err != nil {
		p.t.Fatalf("%s has no address on %s: %+v", name, p.network, inspect[0].NetworkSettings)
	}
	return a
}

// Podman's CNI backend passes K8S_POD_NAME=<container name>: a rule on
// podName puts db-1 in pool db and web-1 in pool web; podman rm frees both.
func TestArgsPodmanContainerNames(t *testing.T) {
	p := newPodman(t)
	// One subnet (one gateway on the bridge), a /24 range per pool.
	write(t, filepath.Join(p.dir, "net.d", p.network+".conflist"), fmt.Sprintf(`{
  "cniVersion": "1.0.0", "name": %q,
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
    "ipam": {
      "type": "ipam-delegated", "delegates": ["ipam-ds-args", "ipam-da-pools"], "dataDir": %q,
      "rules": [{"podName": "db-*", "pools": ["db"]}, {"podName": "web-*", "pools": ["web"]}],
      "poolDefinitions": {
        "db": [{"subnet": "10.211.40.0/21", "rangeStart": "10.211.41.0", "rangeEnd": "10.211.41.255", "gateway": "10.211.40.1"}],
        "web": [{"subnet": "10.211.40.0/21", "rangeStart": "10.211.42.0", "rangeEnd": "10.211.42.255", "gateway": "10.211.40.1"}]
      }
    }
  }]
}`, p.network, p.network, p.dataDir))
	if out := p.run("network", "ls", "--format", "{{.Name}}"); !strings.Contains(out, p.network) {
		t.Fatalf("podman does not see the network %s: %s", p.network, out)
	}
	p.importBusybox()

	want := map[string]netip.Prefix{"db-1": netip.MustParsePrefix("10.211.41.0/24"), "web-1": netip.MustParsePrefix("10.211.42.0/24")}
	pools := map[string]string{"db-1": "db", "web-1": "web"}
	for _, name := range []string{"db-1", "web-1"} {
		p.run("run", "--detach", "--name", name, "--network", p.network, podmanImage, "sleep", "600")
		ip := p.address(name)
		if !want[name].Contains(ip) {
			t.Errorf("%s got %s, want an address of pool %s (%s)", name, ip, pools[name], want[name])
		}
		// The container sees it on its interface...
		if out := p.run("exec", name, "ip", "-4", "addr", "show", "eth0"); !strings.Contains(out, ip.String()+"/21") {
			t.Errorf("%s's eth0 does not hold %s/21:\n%s", name, ip, out)
		}
		// ...and the pool's state directory holds it.
		b, err := os.ReadFile(filepath.Join(p.dataDir, "_pools", pools[name], ip.String()))
		if err != nil || !strings.HasSuffix(string(b), "\r\neth0\r\n"+p.network) {
			t.Errorf("reservation of %s in pool %s: %q, %v", ip, pools[name], b, err)
		}
	}

	p.run("rm", "--force", "--time", "0", "db-1", "web-1")
	for _, pool := range []string{"db", "web"} {
		dir := filepath.Join(p.dataDir, "_pools", pool)
		if got := reservations(t, dir); len(got) != 0 {
			t.Errorf("after podman rm, pool %s still holds %v", pool, keys(got))
		}
	}
}
