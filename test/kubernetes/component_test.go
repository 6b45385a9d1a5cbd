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

	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
)

// The optional components, relative to deploy/kubernetes: the metrics
// listener, and the PodMonitor for the Prometheus Operator.
const (
	metricsDir    = "components/metrics"
	podMonitorDir = "components/podmonitor"
)

// component is the part of kustomize's Component the file may use.
type component struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path   string `json:"path,omitempty"`
		Patch  string `json:"patch,omitempty"`
		Target *struct {
			Group   string `json:"group"`
			Version string `json:"version"`
			Kind    string `json:"kind"`
			Name    string `json:"name"`
		} `json:"target,omitempty"`
	} `json:"patches"`
	ConfigMapGenerator []struct {
		Name    string   `json:"name"`
		Files   []string `json:"files"`
		Options struct {
			Labels                map[string]string `json:"labels"`
			DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
		} `json:"options"`
	} `json:"configMapGenerator"`
}

// podMonitor is the part of the Prometheus Operator's PodMonitor
// (monitoring.coreos.com/v1) the file may use: a local type, so that the
// operator's module is no dependency of this one.
type podMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Interval    string `json:"interval"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
			} `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// metricsComponent is the component as the tests read it: its
// kustomization, the installer's argument its JSON patch adds, and its
// strategic merge patch of the DaemonSet.
type metricsComponent struct {
	k     component
	arg   string
	patch appsv1.DaemonSet
}

func readMetricsComponent(t *testing.T) metricsComponent {
	t.Helper()
	var c metricsComponent
	decode(t, filepath.Join(metricsDir, "kustomization.yaml"), &c.k)
	if c.k.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.k.Kind != "Component" {
		t.Fatalf("%s/kustomization.yaml is %s %s, want a kustomize.config.k8s.io/v1alpha1 Component", metricsDir, c.k.APIVersion, c.k.Kind)
	}
	var base appsv1.DaemonSet
	decode(t, "daemonset.yaml", &base)
	for _, p := range c.k.Patches {
		switch {
		case p.Path != "" && p.Patch == "" && p.Target == nil:
			decode(t, filepath.Join(metricsDir, p.Path), &c.patch)
		case p.Path == "" && p.Target != nil:
			if tg := *p.Target; tg.Group != "apps" || tg.Version != "v1" || tg.Kind != "DaemonSet" || tg.Name != base.Name {
				t.Errorf("patch target %+v, want the DaemonSet %s", tg, base.Name)
			}
			var ops []jsonPatchOp
			if err := yaml.UnmarshalStrict([]byte(p.Patch), &ops); err != nil {
				t.Fatalf("the JSON patch does not decode strictly: %v", err)
			}
			// The one container's arguments, appended to: base's index 0
			// is the installer (TestDaemonSet checks it is alone).
			if len(ops) != 1 || ops[0].Op != "add" || ops[0].Path != "/spec/template/spec/containers/0/args/-" {
				t.Fatalf("JSON patch %+v: want one add to the installer's args", ops)
			}
			c.arg = ops[0].Value
		default:
			t.Errorf("patch %+v: want a strategic merge file or a JSON patch of the DaemonSet", p)
		}
	}
	if c.arg == "" || c.patch.Name != base.Name {
		t.Fatalf("want a JSON patch adding the argument and a strategic merge of %s; got %q and %q", base.Name, c.arg, c.patch.Name)
	}
	return c
}

// The component decodes strictly, names every file of its directory,
// and configures one port everywhere: the installer's --metrics-address,
// the named containerPort, the annotations and the PodMonitor's port.
func TestMetricsComponent(t *testing.T) {
	c := readMetricsComponent(t)
	var base appsv1.DaemonSet
	decode(t, "daemonset.yaml", &base)

	// Every file of the directory is used, and every file used is there.
	usesItsDirectory(t, metricsDir, c.k)
	var pmc component
	decode(t, filepath.Join(podMonitorDir, "kustomization.yaml"), &pmc)
	if pmc.APIVersion != "kustomize.config.k8s.io/v1alpha1" || pmc.Kind != "Component" || len(pmc.Patches) != 0 || len(pmc.ConfigMapGenerator) != 0 {
		t.Errorf("%s: %+v, want a Component of resources only", podMonitorDir, pmc)
	}
	usesItsDirectory(t, podMonitorDir, pmc)

	// The listener, on every address of the node (the pod is on the
	// host's network), at the documented port.
	addr, ok := strings.CutPrefix(c.arg, "--metrics-address=")
	if !ok || addr != "0.0.0.0:9745" {
		t.Errorf("argument %q, want --metrics-address=0.0.0.0:9745", c.arg)
	}
	if len(c.patch.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the strategic merge patches %d containers, want the installer", len(c.patch.Spec.Template.Spec.Containers))
	}
	pc := c.patch.Spec.Template.Spec.Containers[0]
	if pc.Name != base.Spec.Template.Spec.Containers[0].Name {
		t.Errorf("the patch names container %q, the DaemonSet's is %q: the merge would add a container", pc.Name, base.Spec.Template.Spec.Containers[0].Name)
	}
	if len(pc.Ports) != 1 || pc.Ports[0].Name != "metrics" || pc.Ports[0].ContainerPort != 9745 || pc.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v, want metrics: 9745/TCP", pc.Ports)
	}
	wantAnn := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9745", "prometheus.io/path": "/metrics"}
	if got := c.patch.Spec.Template.Annotations; len(got) != len(wantAnn) {
		t.Errorf("pod annotations %v, want %v", got, wantAnn)
	}
	for k, v := range wantAnn {
		if got := c.patch.Spec.Template.Annotations[k]; got != v {
			t.Errorf("annotation %s = %q, want %q", k, got, v)
		}
	}

	// The metrics component makes nothing that needs a CRD: the
	// PodMonitor is its own component, which a cluster without the
	// Prometheus Operator leaves out.
	if len(c.k.Resources) != 0 {
		t.Errorf("resources %v: the PodMonitor belongs to %s", c.k.Resources, podMonitorDir)
	}
	// The PodMonitor selects the DaemonSet's pods on that port.
	if len(pmc.Resources) != 1 {
		t.Fatalf("%s's resources %v, want the PodMonitor", podMonitorDir, pmc.Resources)
	}
	var pm podMonitor
	decode(t, filepath.Join(podMonitorDir, pmc.Resources[0]), &pm)
	if pm.APIVersion != "monitoring.coreos.com/v1" || pm.Kind != "PodMonitor" || pm.Metadata.Name == "" {
		t.Errorf("PodMonitor %s %s %q", pm.APIVersion, pm.Kind, pm.Metadata.Name)
	}
	if len(pm.Spec.Selector.MatchLabels) == 0 {
		t.Error("the PodMonitor selects no label: it would scrape every pod of the namespace")
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if base.Spec.Template.Labels[k] != v {
			t.Errorf("the PodMonitor's %s=%s is not a label of the DaemonSet's pods", k, v)
		}
	}
	if eps := pm.Spec.PodMetricsEndpoints; len(eps) != 1 || eps[0].Port != pc.Ports[0].Name || eps[0].Path != "/metrics" {
		t.Errorf("endpoints %+v, want port %s path /metrics", eps, pc.Ports[0].Name)
	}

	// The dashboard, in a ConfigMap the Grafana sidecar loads.
	if len(c.k.ConfigMapGenerator) != 1 {
		t.Fatalf("configMapGenerator %+v, want the dashboard's", c.k.ConfigMapGenerator)
	}
	g := c.k.ConfigMapGenerator[0]
	if !slices.Equal(g.Files, []string{"grafana-dashboard.json"}) || g.Options.Labels["grafana_dashboard"] != "1" {
		t.Errorf("generator %+v, want grafana-dashboard.json labelled grafana_dashboard: \"1\"", g)
	}
}

// Without the component, no listener: the base is what it was.
func TestBaseServesNoMetrics(t *testing.T) {
	var k kustomization
	decode(t, "kustomization.yaml", &k)
	if len(k.Components) != 0 {
		t.Errorf("the base kustomization enables components %v: metrics are opt-in", k.Components)
	}
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	c := ds.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--metrics-address") {
			t.Errorf("the base DaemonSet passes %s", a)
		}
	}
	if len(c.Ports) != 0 || len(ds.Spec.Template.Annotations) != 0 {
		t.Errorf("the base DaemonSet declares ports %+v, annotations %v", c.Ports, ds.Spec.Template.Annotations)
	}
}

// dashboard is the part of Grafana's dashboard JSON the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k8smanifest.Dir(), metricsDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return d
}

// dashboardQueries are every PromQL expression of the dashboard: each
// panel target's, and each query variable's label_values selector.
func dashboardQueries(t *testing.T, d dashboard) []string {
	t.Helper()
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, ok := labelValuesSelector(v.Definition)
		if !ok {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
		}
		exprs = append(exprs, sel)
	}
	return exprs
}

// The dashboard has the panels the component promises, each on the
// dashboard's data source variable; what its queries name is checked
// against the real binary's exposition (TestMetricsServedAsTheComponentConfigures).
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q uid %q", d.Title, d.UID)
	}
	named := map[string]bool{}
	for _, e := range dashboardQueries(t, d) {
		for _, n := range metricNames(e) {
			named[n] = true
		}
	}
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
	}
	// Pool usage, tenants against quotas, exhausted pools, GC releases,
	// the installer's last install.
	for _, m := range []string{"cniplugins_ipam_used_addresses", "cniplugins_ipam_size_addresses", "cniplugins_tenant_addresses",
		"cniplugins_tenant_quota", "cniplugins_ipam_exhausted", "cniplugins_gc_released_total", "cniplugins_install_last_timestamp_seconds"} {
		if !named[m] {
			t.Errorf("no panel queries %s", m)
		}
	}
}

// usesItsDirectory checks that a component names every file of its
// directory, and that every file it names is there.
func usesItsDirectory(t *testing.T, dir string, k component) {
	t.Helper()
	used := []string{"kustomization.yaml"}
	used = append(used, k.Resources...)
	for _, p := range k.Patches {
		if p.Path != "" {
			used = append(used, p.Path)
		}
	}
	for _, g := range k.ConfigMapGenerator {
		used = append(used, g.Files...)
	}
	entries, err := os.ReadDir(filepath.Join(k8smanifest.Dir(), dir))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if slices.Sort(used); !slices.Equal(used, files) {
		t.Errorf("%s uses %v, its directory holds %v", dir, used, files)
	}
}
