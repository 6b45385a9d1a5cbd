package cri

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/cniplugins/cniplugins/internal/testkit/ctrimage"
	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// imageRepo names the images the tests build: the full flavour's, as
// the DaemonSet runs it.
const imageRepo = "cnpcri.test/cniplugins-full"

// imageOf builds the full flavour's image of binary, tagged version, with
// the builder of `make image`, and returns its archive.
func imageOf(t *testing.T, binary, version string) string {
	t.Helper()
	archive, err := ctrimage.CNIPlugins(t.TempDir(), imageRepo, version, binary)
	if err != nil {
		t.Fatal(err)
	}
	return archive
}

// node is one Kubernetes node as the DaemonSet finds it: a private
// containerd whose CNI bin dir holds only the upstream bridge and
// loopback plugins and whose net.d is empty, temporary directories
// standing for /opt/cni/bin, /etc/cni/net.d and the data dir, and the
// ConfigMap mounted as the kubelet mounts it.
type node struct {
	c            *containerd
	bin, dataDir string
	configMap    *k8smanifest.ConfigMapVolume
	ds           appsv1.DaemonSet
	// conflist is the ConfigMap's file name and content, as this node
	// installs it: the shipped conflist on this node's directories and
	// a subnet of the tests'.
	confName, conflist string
}

// tenantsSecond is the node's pods' subnet, 10.<tenantsSecond>.0.0/16:
// the shipped conflist's 10.60.0.0/16, moved off anything real.
const tenantsSecond = 253

func newNode(t *testing.T) *node {
	t.Helper()
	needCRI(t)
	root, err := os.MkdirTemp("", "cnpcri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	nd := &node{bin: filepath.Join(root, "opt-cni-bin")}
	if err := os.MkdirAll(nd.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The node runs Debian's containerd 1.6 with Debian's plugins; its
	// bin dir holds nothing of cniplugins until the installer runs.
	rel := *rels[0]
	rel.cniBin = nd.bin
	if err := rel.linkUpstream("bridge", "loopback"); err != nil {
		t.Fatal(err)
	}
	if err := k8smanifest.Decode("daemonset.yaml", &nd.ds); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := k8smanifest.Decode("configmap.yaml", &cm); err != nil {
		t.Fatal(err)
	}
	// containerd starts with the network startContainerd writes; it is
	// removed at once, so the node's net.d is empty until the installer
	// fills it.
	n := network{name: "k8s-tenants", bridge: "cnpcri9"}
	c, err := startContainerd(root, &rel, n, `{"type": "host-local", "subnet": "10.253.0.0/16", "dataDir": %q}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	nd.c, nd.dataDir = c, c.net.dataDir
	if err := os.Remove(filepath.Join(c.confDir, "10-"+n.name+".conflist")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(nd.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.importImage(pauseTar); err != nil {
		t.Fatal(err)
	}
	for name, conf := range cm.Data {
		nd.confName = name
		nd.conflist = strings.NewReplacer(
			`"10.60.`, fmt.Sprintf(`"10.%d.`, tenantsSecond),
			`"cni-tenants0"`, fmt.Sprintf("%q", n.bridge),
			`"/var/lib/cni/networks"`, fmt.Sprintf("%q", nd.dataDir),
		).Replace(conf)
	}
	if nd.conflist == "" || !strings.Contains(nd.conflist, nd.dataDir) || !strings.Contains(nd.conflist, n.bridge) {
		t.Fatalf("configmap.yaml's conflist %s does not name the data dir, the bridge and 10.60.0.0/16 as the test expects:\n%s", nd.confName, nd.conflist)
	}
	cmDir := filepath.Join(root, "configmap")
	if err := os.Mkdir(cmDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if nd.configMap, err = k8smanifest.NewConfigMapVolume(cmDir, map[string]string{nd.confName: nd.conflist}); err != nil {
		t.Fatal(err)
	}
	return nd
}

// hostDir maps a hostPath of the DaemonSet to the node's stand-in.
func (nd *node) hostDir(t *testing.T, path string) string {
	t.Helper()
	switch path {
	case "/opt/cni/bin":
		return nd.bin
	case "/etc/cni/net.d":
		return nd.c.confDir
	case "/var/lib/cni/networks":
		return nd.dataDir
	case "/run/containerd/containerd.sock":
		return nd.c.sock
	}
	t.Fatalf("the DaemonSet mounts hostPath %s, which this test does not stand in for", path)
	return ""
}

// installer is one run of the DaemonSet's container on the node.
type installer struct {
	nd           *node
	sandbox, id  string
	logDir, name string
}

// container is the one container of the DaemonSet's pod template.
func (nd *node) container() corev1.Container { return nd.ds.Spec.Template.Spec.Containers[0] }

// runInstaller runs the DaemonSet's container, from image ref, through
// the CRI as the kubelet would: a host-network sandbox, the container's
// args (extra appended: a later flag wins), its security context and its
// mounts, each hostPath the node's stand-in and the ConfigMap the node's
// mounted copy.
func (nd *node) runInstaller(t *testing.T, ref string, extra ...string) *installer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := nd.ds.Spec.Template.Spec
	ctr := nd.container()
	uid := fmt.Sprintf("uid-%d-%d", os.Getpid(), podSeq.Add(1))
	in := &installer{nd: nd, name: "cniplugins-" + uid, logDir: filepath.Join(nd.c.root, "logs", uid)}
	if err := os.MkdirAll(in.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A host-network pod shares the node's UTS namespace too: the kubelet
	// sets no hostname for it.
	network, hostname := runtimeapi.NamespaceMode_POD, in.name
	if spec.HostNetwork {
		network, hostname = runtimeapi.NamespaceMode_NODE, ""
	}
	sandboxCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: in.name, Namespace: "kube-system", Uid: uid},
		Hostname:     hostname,
		LogDirectory: in.logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: network},
		}},
	}
	sb, err := nd.c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox for the installer: %v", err)
	}
	in.sandbox = sb.PodSandboxId
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var mounts []*runtimeapi.Mount
	for _, m := range ctr.VolumeMounts {
		v := volumes[m.Name]
		var host string
		switch {
		case v.HostPath != nil:
			host = nd.hostDir(t, v.HostPath.Path)
		case v.ConfigMap != nil:
			host = nd.configMap.Dir
		default:
			t.Fatalf("volume %s is neither a hostPath nor a ConfigMap", m.Name)
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: m.ReadOnly})
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{}
	if s := ctr.SecurityContext; s != nil {
		if s.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *s.RunAsUser}
		}
		sc.ReadonlyRootfs = s.ReadOnlyRootFilesystem != nil && *s.ReadOnlyRootFilesystem
		sc.NoNewPrivs = s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: ctr.Name},
		Image:    &runtimeapi.ImageSpec{Image: ref},
		Args:     append(append([]string{}, ctr.Args...), extra...),
		Mounts:   mounts,
		LogPath:  "install.log",
		Linux:    &runtimeapi.LinuxContainerConfig{SecurityContext: sc},
	}
	created, err := nd.c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: in.sandbox, Config: cfg, SandboxConfig: sandboxCfg})
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", ref, err)
	}
	in.id = created.ContainerId
	if _, err := nd.c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: in.id}); err != nil {
		t.Fatalf("StartContainer %s: %v\n%s", ref, err, in.log())
	}
	return in
}

// wait waits (at most 2 minutes) for the installer to exit and returns
// its exit code.
func (in *installer) wait(t *testing.T) int32 {
	t.Helper()
	for range 1200 {
		st, err := in.nd.c.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: in.id})
		if err != nil {
			t.Fatalf("ContainerStatus: %v", err)
		}
		if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			return st.Status.ExitCode
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the installer did not exit within 2 minutes; its log:\n%s", in.log())
	return -1
}

// stop is the kubelet's StopContainer (SIGTERM, then SIGKILL after the
// grace period) and returns the exit code.
func (in *installer) stop(t *testing.T) int32 {
	t.Helper()
	grace := int64(10)
	if g := in.nd.ds.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := in.nd.c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: in.id, Timeout: grace}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	return in.wait(t)
}

// log is what the container wrote, without the CRI log format's
// timestamp, stream and tag.
func (in *installer) log() string {
	f, err := os.Open(filepath.Join(in.logDir, "install.log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 4)
		if len(fields) == 4 {
			b.WriteString(fields[3] + "\n")
		}
	}
	return b.String()
}

// install runs the installer once, as an init container would, and
// fails the test unless it exits 0.
func (nd *node) install(t *testing.T, ref string) *installer {
	t.Helper()
	in := nd.runInstaller(t, ref, "--watch=false")
	if code := in.wait(t); code != 0 {
		t.Fatalf("the installer of %s exited %d; its log:\n%s", ref, code, in.log())
	}
	return in
}

// importImage imports archive into the node's containerd and returns the
// reference of the image it holds.
func (nd *node) importImage(t *testing.T, archive, version string) string {
	t.Helper()
	if err := nd.c.importImage(archive); err != nil {
		t.Fatal(err)
	}
	return imageRepo + ":" + version
}

// runPod starts a pod once the runtime has loaded the installed network:
// until then RunPodSandbox fails (no network configuration), at most for
// a minute. The node's containerd removes its pods when it stops.
func (nd *node) runPod(t *testing.T, namespace, name string) pod {
	t.Helper()
	var err error
	for range 60 {
		var p pod
		if p, err = nd.c.runPod(context.Background(), namespace, name, nil); err == nil {
			return p
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("RunPodSandbox %s/%s for a minute: %v", namespace, name, err)
	return pod{}
}

// leases is `cniplugins leases` of the node's data dir, run from the
// installed binary.
func (nd *node) leases(t *testing.T) []lease {
	t.Helper()
	r := testbin.Run(testbin.Call{Path: nd.bin, Plugin: "cniplugins", Argv: []string{"leases", "--data-dir", nd.dataDir, "-o", "json"}})
	if r.Exit != 0 {
		t.Fatalf("installed cniplugins leases: exit %d: %s", r.Exit, r.Stderr)
	}
	return decodeLeases(t, r.Stdout)
}

func decodeLeases(t *testing.T, b []byte) []lease {
	t.Helper()
	var ls []lease
	if err := json.Unmarshal(b, &ls); err != nil {
		t.Fatalf("leases -o json: %v: %s", err, b)
	}
	return ls
}
