// Package kubernetes checks the manifests of deploy/kubernetes against
// the Kubernetes API's own types, without a cluster: every file decodes
// strictly (a field the API does not know, or a duplicate, is an error),
// the fields the API server requires are there, and the DaemonSet is what
// docs/kubernetes.md says it is.
package kubernetes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
)

// decode reads one manifest strictly into v.
func decode(t *testing.T, name string, v any) {
	t.Helper()
	if err := k8smanifest.Decode(name, v); err != nil {
		t.Fatal(err)
	}
}

// kustomization is the part of kustomize's Kustomization the file may
// use; anything else is an unknown field.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	// Components is where an operator enables components/metrics.
	Components []string `json:"components,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images"`
}

func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	var ds appsv1.DaemonSet
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      hostNetwrok: true\n"), &ds)
	if err == nil || !strings.Contains(err.Error(), "hostNetwrok") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

func TestKustomization(t *testing.T) {
	var k kustomization
	decode(t, "kustomization.yaml", &k)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" || k.Namespace != "kube-system" {
		t.Errorf("kustomization: %+v", k)
	}
	// Every manifest of the directory is a resource, and every resource
	// is there.
	files, err := filepath.Glob(filepath.Join(k8smanifest.Dir(), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("resources %v, the directory holds %v", got, want)
	}
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	image := ds.Spec.Template.Spec.Containers[0].Image
	if len(k.Images) != 1 || !strings.HasPrefix(image, k.Images[0].Name+":") || k.Images[0].NewTag == "" {
		t.Errorf("images %+v: want one entry setting the tag of the DaemonSet's %s", k.Images, image)
	}
}

func TestConfigMapIsTheTenantsExample(t *testing.T) {
	var cm corev1.ConfigMap
	decode(t, "configmap.yaml", &cm)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "cniplugins-conflist" {
		t.Errorf("ConfigMap %s %s %q", cm.APIVersion, cm.Kind, cm.Name)
	}
	if len(cm.Data) != 1 {
		t.Fatalf("data has %d keys, want the one conflist", len(cm.Data))
	}
	example, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "examples", "k8s-namespace-tenants.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	for name, conf := range cm.Data {
		if filepath.Ext(name) != ".conflist" {
			t.Errorf("key %s: libcni loads only .conflist, .conf and .json", name)
		}
		if conf != string(example) {
			t.Errorf("%s differs from examples/k8s-namespace-tenants.conflist: keep them one file", name)
		}
		var list struct {
			Plugins []struct {
				IPAM struct {
					Type      string   `json:"type"`
					Delegates []string `json:"delegates"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(conf), &list); err != nil || len(list.Plugins) == 0 ||
			list.Plugins[0].IPAM.Type != "ipam-delegated" || !slices.Equal(list.Plugins[0].IPAM.Delegates, []string{"ipam-ds-args", "ipam-da-pools"}) {
			t.Errorf("%s: %v; want ipam-delegated → ipam-ds-args → ipam-da-pools", name, err)
		}
	}
}

// hostPaths are the node directories the installer needs, by what they
// are to it: the flag that names the mount, and the host path.
var hostPaths = []struct{ flag, host string }{
	{"--bin-dir", "/opt/cni/bin"},
	{"--net-dir", "/etc/cni/net.d"},
	{"--data-dir", "/var/lib/cni/networks"},
	{"--gc-cri", "/run/containerd/containerd.sock"},
}

func TestDaemonSet(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" || ds.Name == "" {
		t.Fatalf("%s %s %q", ds.APIVersion, ds.Kind, ds.Name)
	}
	spec := ds.Spec.Template.Spec
	// What the API server requires of a DaemonSet.
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 {
		t.Fatal("no spec.selector")
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("the selector's %s=%s is not a label of the template", k, v)
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want the installer", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Name == "" || c.Image == "" {
		t.Errorf("container name %q image %q", c.Name, c.Image)
	}
	if spec.RestartPolicy != "" && spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy %s: a DaemonSet's pods restart always", spec.RestartPolicy)
	}

	// On every node, first, with no API access.
	if !spec.HostNetwork {
		t.Error("not hostNetwork: the pod network this pod sets up may not exist yet")
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q", spec.PriorityClassName)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Operator == corev1.TolerationOpExists && tol.Key == "" && tol.Effect == ""
	}) {
		t.Errorf("tolerations %+v: want one tolerating every taint (operator Exists, no key, no effect)", spec.Tolerations)
	}
	if spec.ServiceAccountName != "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the installer calls no API: no service account, no token")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}

	// Each node directory is a hostPath volume, mounted where the
	// installer's flag says.
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			t.Errorf("mount %s names no volume", m.Name)
		}
		mounts[m.MountPath] = m
	}
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "k8s-install" {
		t.Fatalf("command %q args %q: want the image's entrypoint with k8s-install", c.Command, c.Args)
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(a, "=")
		flags[name] = value
	}
	if _, ok := flags["--watch"]; !ok {
		t.Error("no --watch: the ConfigMap's updates and the GC loop need the installer to stay")
	}
	for _, hp := range hostPaths {
		m, ok := mounts[flags[hp.flag]]
		if !ok {
			t.Errorf("%s=%s: nothing is mounted there", hp.flag, flags[hp.flag])
			continue
		}
		v := volumes[m.Name]
		if v.HostPath == nil || v.HostPath.Path != hp.host {
			t.Errorf("%s is mounted from %+v, want hostPath %s", flags[hp.flag], v.VolumeSource, hp.host)
		}
	}
	m, ok := mounts[flags["--conf-source"]]
	if !ok || volumes[m.Name].ConfigMap == nil || !m.ReadOnly {
		t.Errorf("--conf-source=%s: want a ConfigMap mounted read-only there", flags["--conf-source"])
	} else {
		var cm corev1.ConfigMap
		decode(t, "configmap.yaml", &cm)
		if volumes[m.Name].ConfigMap.Name != cm.Name {
			t.Errorf("the ConfigMap volume names %s, configmap.yaml is %s", volumes[m.Name].ConfigMap.Name, cm.Name)
		}
	}
}
