package hardening

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
)

// The attacker of these tests may edit the installer's ConfigMap (a
// namespace admin); the node's net.d and bin dir also hold other
// software's files. `cniplugins k8s-install` runs as the DaemonSet does,
// against a temporary bin dir and net.d standing for the node's.

// standInPlugin answers VERSION as the upstream plugins of Debian 12
// (containernetworking-plugins 1.1.1) do: up to 1.0.0.
const standInPlugin = `#!/bin/sh
printf '%s' '{"cniVersion":"1.0.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]}'
`

// tenantsConf is a bridge conflist through ipam-delegated → ipam-ds-args
// → ipam-da-pools; edit changes its decoded form before it is encoded.
func tenantsConf(t *testing.T, edit func(list map[string]any)) string {
	t.Helper()
	ipam := map[string]any{
		"type": "ipam-delegated", "delegates": []any{"ipam-ds-args", "ipam-da-pools"},
		"namespaceFrom":   "kubernetes",
		"rules":           []any{map[string]any{"namespace": "team-a", "pools": []any{"team-a"}}},
		"defaultPools":    []any{"others"},
		"poolDefinitions": map[string]any{"team-a": []any{map[string]any{"subnet": "10.212.1.0/24"}}, "others": []any{map[string]any{"subnet": "10.212.2.0/24"}}},
		"dataDir":         "/var/lib/cni/networks",
	}
	list := map[string]any{"cniVersion": "1.0.0", "name": "k8s-tenants", "plugins": []any{
		map[string]any{"type": "bridge", "bridge": "cni-t0", "ipam": ipam},
		map[string]any{"type": "loopback"},
	}}
	if edit != nil {
		edit(list)
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ipamOf is the first plugin's ipam object of a decoded conflist.
func ipamOf(list map[string]any) map[string]any {
	return list["plugins"].([]any)[0].(map[string]any)["ipam"].(map[string]any)
}

// installerNode is a node's bin dir (the upstream bridge and loopback in
// it) and net.d (calico's conflist in it).
type installerNode struct{ bin, netd string }

const calicoConf = `{"cniVersion":"1.0.0","name":"k8s-pod-network","plugins":[{"type":"calico"}]}`

func newInstallerNode(t *testing.T) installerNode {
	t.Helper()
	n := installerNode{bin: t.TempDir(), netd: t.TempDir()}
	for _, p := range []string{"bridge", "loopback"} {
		if err := os.WriteFile(filepath.Join(n.bin, p), []byte(standInPlugin), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(n.netd, "10-calico.conflist"), []byte(calicoConf), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// installerRun is how one run of k8s-install ended.
type installerRun struct {
	code   int
	stderr string
	// hung: it had not exited within its time, nor within 5 s of SIGTERM,
	// and was killed.
	hung bool
}

// runInstaller execs the installed binary as `cniplugins k8s-install
// args...`. sigterm, when set, is sent after that long (a --watch run
// that a rollout ends); without it the run must end by itself.
func runInstaller(t *testing.T, n installerNode, source string, sigterm time.Duration, args ...string) installerRun {
	t.Helper()
	args = append([]string{"k8s-install", "--bin-dir", n.bin, "--net-dir", n.netd, "--conf-source", source}, args...)
	cmd := exec.Command(filepath.Join(binDir, "cniplugins"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	wait := execMargin
	if sigterm > 0 {
		wait = sigterm
	}
	hung := false
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			hung = sigterm == 0
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			hung = true
		}
	}
	return installerRun{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), hung: hung}
}

// dirState is a directory's entries: name → content (or link target).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			dest, _ := os.Readlink(p)
			out[e.Name()] = "-> " + dest
			continue
		}
		b, _ := os.ReadFile(p)
		out[e.Name()] = string(b)
	}
	return out
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// generation is the directory a ConfigMap volume's ..data points at.
func generation(t *testing.T, cm *k8smanifest.ConfigMapVolume) string {
	t.Helper()
	gen, err := os.Readlink(filepath.Join(cm.Dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(cm.Dir, gen)
}

// A ConfigMap an attacker edited is refused whole: each hostile entry is
// named with its reason, the run exits non-zero (no hang, and SIGTERM
// is honoured), and net.d keeps exactly what it held, calico's conflist
// and the tenants conflist installed before alike. A hidden key is
// skipped and the rest installed.
func TestInstallerHostileConfigMap(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "root-only.conflist")
	if err := os.WriteFile(secret, []byte(tenantsConf(t, func(l map[string]any) { l["name"] = "secret" })), 0o600); err != nil {
		t.Fatal(err)
	}
	updated := tenantsConf(t, func(l map[string]any) { ipamOf(l)["defaultPools"] = []any{"team-a"} })

	for _, tc := range []struct {
		name string
		// data: the ConfigMap's keys besides 20-tenants.conflist (given
		// updated); plant changes the volume after it is laid out.
		data  map[string]string
		plant func(t *testing.T, cm *k8smanifest.ConfigMapVolume)
		want  []string // in stderr
	}{
		{name: "calico's conflist", data: map[string]string{"10-calico.conflist": tenantsConf(t, nil)},
			want: []string{"10-calico.conflist not installed", "refusing to replace " + "NETD/10-calico.conflist", "not installed by cniplugins"}},
		{name: "a key linked to a root-only file",
			plant: func(t *testing.T, cm *k8smanifest.ConfigMapVolume) {
				if err := os.Symlink(secret, filepath.Join(cm.Dir, "30-secret.conflist")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"30-secret.conflist", "only the kubelet's link to ..data/30-secret.conflist is followed"}},
		{name: "a link inside ..data", data: map[string]string{"30-secret.conflist": "{}"},
			plant: func(t *testing.T, cm *k8smanifest.ConfigMapVolume) {
				p := filepath.Join(generation(t, cm), "30-secret.conflist")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(secret, p); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"30-secret.conflist", "a symbolic link, not a regular file"}},
		{name: "a FIFO", data: map[string]string{"50-fifo.conflist": "{}"},
			plant: func(t *testing.T, cm *k8smanifest.ConfigMapVolume) {
				p := filepath.Join(generation(t, cm), "50-fifo.conflist")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"50-fifo.conflist", "not a regular file (a FIFO)"}},
		{name: "a plugin type that is not in the bin dir",
			data: map[string]string{"40-bridgee.conflist": tenantsConf(t, func(l map[string]any) { l["plugins"].([]any)[0].(map[string]any)["type"] = "bridgee" })},
			want: []string{"40-bridgee.conflist", "plugins[0].type = bridgee: no plugin bridgee in the bin dir"}},
		{name: "a plugin type that is a path",
			data: map[string]string{"40-path.conflist": tenantsConf(t, func(l map[string]any) { l["plugins"].([]any)[1].(map[string]any)["type"] = "../../../tmp/x" })},
			want: []string{"40-path.conflist", "plugins[1].type = ../../../tmp/x: a plugin type is a file name of the bin dir"}},
		{name: "an ipam without a type",
			data: map[string]string{"40-noipam.conflist": tenantsConf(t, func(l map[string]any) { delete(ipamOf(l), "type") })},
			want: []string{"40-noipam.conflist", "plugins[0].ipam.type: an ipam object needs a type"}},
		{name: "a quota of 0",
			data: map[string]string{"40-quota.conflist": tenantsConf(t, func(l map[string]any) {
				ipamOf(l)["rules"].([]any)[0].(map[string]any)["quota"] = map[string]any{"per": "namespace", "max": 0}
			})},
			want: []string{"40-quota.conflist", "plugins[0].ipam.rules[0].quota.max = 0: a quota of 0 refuses every ADD"}},
		{name: "a version the bridge does not speak",
			data: map[string]string{"40-version.conflist": tenantsConf(t, func(l map[string]any) { l["cniVersion"] = "1.1.0" })},
			want: []string{"40-version.conflist", "plugins[0].type = bridge: the plugin does not support version 1.1.0 (cniVersion)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newInstallerNode(t)
			good := newConfigMapVolume(t, map[string]string{"20-tenants.conflist": tenantsConf(t, nil)})
			if r := runInstaller(t, n, good.Dir, 0); r.code != 0 || r.hung {
				t.Fatalf("installing the operator's ConfigMap: exit %d (hung %v):\n%s", r.code, r.hung, r.stderr)
			}
			before := dirState(t, n.netd)
			binBefore := dirState(t, n.bin)
			data := map[string]string{"20-tenants.conflist": updated}
			for k, v := range tc.data {
				data[k] = v
			}
			cm := newConfigMapVolume(t, data)
			if tc.plant != nil {
				tc.plant(t, cm)
			}
			r := runInstaller(t, n, cm.Dir, 0)
			if r.hung {
				t.Fatalf("k8s-install hung and ignored SIGTERM; it was killed. stderr:\n%s", r.stderr)
			}
			if r.code == 0 {
				t.Errorf("k8s-install exited 0 with the attacker's ConfigMap; stderr:\n%s", r.stderr)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "NETD", n.netd); !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if after := dirState(t, n.netd); !mapsEqual(after, before) {
				t.Errorf("net.d changed: before %v, after %v", before, after)
			}
			if got := dirState(t, n.bin); !mapsEqual(got, binBefore) {
				t.Errorf("the bin dir changed: %v, was %v", keys(got), keys(binBefore))
			}
		})
	}

	t.Run("a hidden key", func(t *testing.T) {
		n := newInstallerNode(t)
		cm := newConfigMapVolume(t, map[string]string{"20-tenants.conflist": updated, ".00-hidden.conflist": tenantsConf(t, nil)})
		r := runInstaller(t, n, cm.Dir, 0)
		if r.code != 0 || r.hung {
			t.Fatalf("exit %d (hung %v), want 0:\n%s", r.code, r.hung, r.stderr)
		}
		got := dirState(t, n.netd)
		if _, ok := got[".00-hidden.conflist"]; ok {
			t.Errorf("the hidden key was installed: net.d holds %v", keys(got))
		}
		if got["20-tenants.conflist"] != updated || got["10-calico.conflist"] != calicoConf {
			t.Errorf("net.d holds %v, want the tenants conflist installed and calico's untouched", keys(got))
		}
		if !strings.Contains(r.stderr, "skipped .00-hidden.conflist") {
			t.Errorf("stderr does not report the skipped hidden key:\n%s", r.stderr)
		}
	})

	// Watching, a FIFO in the ConfigMap neither hangs the installer nor
	// stops SIGTERM: the refusal is logged, and SIGTERM ends it with 0.
	t.Run("a FIFO while watching, then SIGTERM", func(t *testing.T) {
		n := newInstallerNode(t)
		cm := newConfigMapVolume(t, map[string]string{"20-tenants.conflist": updated, "50-fifo.conflist": "{}"})
		p := filepath.Join(generation(t, cm), "50-fifo.conflist")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runInstaller(t, n, cm.Dir, 3*time.Second, "--watch", "--interval", "100ms")
		if r.hung || r.code != 0 {
			t.Fatalf("exit %d (hung and killed: %v), want 0 on SIGTERM:\n%s", r.code, r.hung, r.stderr)
		}
		if !strings.Contains(r.stderr, "not a regular file (a FIFO)") || strings.Count(r.stderr, "not a regular file (a FIFO)") != 1 {
			t.Errorf("stderr should report the refusal once:\n%s", r.stderr)
		}
		if _, ok := dirState(t, n.netd)["20-tenants.conflist"]; ok {
			t.Error("a refused ConfigMap was partly installed")
		}
	})
}

// Files of the bin dir that are other software's are never replaced, and
// a refusal comes before anything is written.
func TestInstallerForeignBinDir(t *testing.T) {
	for _, name := range []string{"cniplugins", "ipam-delegated"} {
		t.Run(name, func(t *testing.T) {
			n := newInstallerNode(t)
			foreign := "#!/bin/sh\necho someone else's " + name + "\n"
			if err := os.WriteFile(filepath.Join(n.bin, name), []byte(foreign), 0o755); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, n.bin)
			cm := newConfigMapVolume(t, map[string]string{"20-tenants.conflist": tenantsConf(t, nil)})
			r := runInstaller(t, n, cm.Dir, 0)
			if r.code == 0 || r.hung || !strings.Contains(r.stderr, "refusing to replace "+filepath.Join(n.bin, name)) {
				t.Errorf("exit %d (hung %v), want a refusal naming %s:\n%s", r.code, r.hung, name, r.stderr)
			}
			if got := dirState(t, n.bin); !mapsEqual(got, before) {
				t.Errorf("the bin dir changed: holds %v, was %v", keys(got), keys(before))
			}
		})
	}
}

func newConfigMapVolume(t *testing.T, data map[string]string) *k8smanifest.ConfigMapVolume {
	t.Helper()
	v, err := k8smanifest.NewConfigMapVolume(t.TempDir(), data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
