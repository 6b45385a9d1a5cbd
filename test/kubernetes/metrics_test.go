package kubernetes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// standInPlugin answers VERSION as the upstream bridge and loopback do,
// for the installer's check that the conflist's plugins are in the bin dir.
const standInPlugin = `#!/bin/sh
printf '%s' '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}'
`

// quotaIPAM is the ipam of the test's network: the tenants of the
// DaemonSet's ConfigMap, with a quota, so that the tenant series appear.
const quotaIPAM = `{"type":"ipam-delegated","delegates":["ipam-ds-args","ipam-da-pools"],"namespaceFrom":"kubernetes",
	"rules":[{"namespace":"team-a","pools":["team-a"],"quota":{"per":"namespace","max":5}}],"defaultPools":["others"],
	"poolDefinitions":{"team-a":[{"subnet":"10.61.10.0/24"}],"others":[{"subnet":"10.61.40.0/24"}]},"dataDir":"DATA"}`

// installerNode is a node's directories for the installer, in temporary
// directories: the flags of the DaemonSet's container that name them are
// pointed there.
type installerNode struct{ bin, netd, data, source string }

func newInstallerNode(t *testing.T) installerNode {
	t.Helper()
	n := installerNode{bin: t.TempDir(), netd: t.TempDir(), data: t.TempDir(), source: t.TempDir()}
	for _, p := range []string{"bridge", "loopback"} {
		if err := os.WriteFile(filepath.Join(n.bin, p), []byte(standInPlugin), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"k8s-tenants","plugins":[{"type":"bridge","bridge":"cni-t0","ipam":%s},{"type":"loopback"}]}`,
		strings.ReplaceAll(quotaIPAM, "DATA", n.data))
	if _, err := k8smanifest.NewConfigMapVolume(n.source, map[string]string{"10-k8s-tenants.conflist": conf}); err != nil {
		t.Fatal(err)
	}
	return n
}

// componentArgs are the DaemonSet's container arguments with the
// component's added, each node directory pointed at n's and the listener
// at a free port of the loopback; the CRI socket is one where nothing
// answers, so that each GC pass fails and counts as failed.
func componentArgs(t *testing.T, n installerNode) []string {
	t.Helper()
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	args := append(slices.Clone(ds.Spec.Template.Spec.Containers[0].Args), readMetricsComponent(t).arg)
	local := map[string]string{"--bin-dir": n.bin, "--net-dir": n.netd, "--data-dir": n.data, "--conf-source": n.source,
		"--gc-cri": filepath.Join(n.data, "no-runtime.sock"), "--metrics-address": "127.0.0.1:0"}
	for i, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := local[name]; ok {
			args[i] = name + "=" + v
			delete(local, name)
		}
	}
	if len(local) > 0 {
		t.Fatalf("the DaemonSet with the component passes none of %v", local)
	}
	return args
}

// family is one metric family of a scrape.
type family struct {
	typ, help string // typ as the parser names it: "COUNTER", "GAUGE"
	samples   []sample
}

type sample struct {
	labels map[string]string
	value  float64
}

// scrape GETs url and parses the exposition with Prometheus' own parser.
func scrape(t *testing.T, url string) (map[string]family, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET %s: %d, Content-Type %q", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	var p expfmt.TextParser
	parsed, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	fams := map[string]family{}
	for name, f := range parsed {
		fam := family{typ: f.GetType().String(), help: f.GetHelp()}
		for _, m := range f.GetMetric() {
			s := sample{labels: map[string]string{}, value: m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			fam.samples = append(fam.samples, s)
		}
		fams[name] = fam
	}
	return fams, string(body)
}

// value is the value of the series of fams[name] whose labels include
// labels, and whether there is one.
func value(fams map[string]family, name string, labels map[string]string) (float64, bool) {
	for _, s := range fams[name].samples {
		match := true
		for k, v := range labels {
			match = match && s.labels[k] == v
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

// The real full binary, run with the DaemonSet's arguments and the
// component's, serves what the docs say: the node's pools and tenants,
// the installer's counters; a net.d it cannot read is a scrape error,
// not a missing target; SIGTERM stops it. Every query of the dashboard
// names only metrics it serves.
func TestMetricsServedAsTheComponentConfigures(t *testing.T) {
	full, err := testkit.Build(t.TempDir(), "full")
	if err != nil {
		t.Fatal(err)
	}
	n := newInstallerNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, full, componentArgs(t, n)...)
	cmd.Args[0] = "cniplugins" // as the image's entrypoint calls it
	var stderr testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30s for %s; the installer said:\n%s", what, stderr.String())
			}
		}
	}
	serving := regexp.MustCompile(`metrics: serving on (\S+)\n`)
	wait("the listener's address", func() bool { return serving.MatchString(stderr.String()) })
	url := "http://" + serving.FindStringSubmatch(stderr.String())[1] + "/metrics"
	wait("the first install and GC pass", func() bool {
		fams, _ := scrape(t, url)
		c, _ := value(fams, "cniplugins_install_conflists", nil)
		g, _ := value(fams, "cniplugins_gc_runs_total", nil)
		return c == 1 && g >= 1
	})

	// One pod of team-a, through the installed plugins.
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"k8s-tenants","ipam":%s}`, strings.ReplaceAll(quotaIPAM, "DATA", n.data))
	testbin.MustSucceed(t, testbin.Call{Plugin: "ipam-delegated", Command: "ADD", ContainerID: "pod-1", IfName: "eth0", Netns: "/var/run/netns/pod-1",
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=p1", Path: n.bin, Stdin: []byte(conf)})

	fams, body := scrape(t, url)
	pool := map[string]string{"kind": "pool", "name": "team-a", "networks": "k8s-tenants"}
	tenant := map[string]string{"tenant": "namespace=team-a", "pool": "team-a"}
	wants := []struct {
		name   string
		labels map[string]string
		check  func(float64) bool
		what   string
	}{
		{"cniplugins_ipam_used_addresses", pool, func(v float64) bool { return v == 1 }, "1"},
		{"cniplugins_ipam_size_addresses", pool, func(v float64) bool { return v == 253 }, "253"},
		{"cniplugins_ipam_exhausted", pool, func(v float64) bool { return v == 0 }, "0"},
		{"cniplugins_tenant_addresses", tenant, func(v float64) bool { return v == 1 }, "1"},
		{"cniplugins_tenant_quota", tenant, func(v float64) bool { return v == 5 }, "5"},
		{"cniplugins_gc_runs_total", nil, func(v float64) bool { return v >= 1 }, "at least 1"},
		{"cniplugins_gc_errors_total", nil, func(v float64) bool { return v >= 1 }, "at least 1 (no runtime answers)"},
		{"cniplugins_gc_released_total", nil, func(v float64) bool { return v == 0 }, "0"},
		{"cniplugins_gc_last_run_timestamp_seconds", nil, func(v float64) bool { return v > 1e9 }, "a time"},
		{"cniplugins_install_last_timestamp_seconds", nil, func(v float64) bool { return v > 1e9 }, "a time"},
		{"cniplugins_install_conflists", nil, func(v float64) bool { return v == 1 }, "1"},
		{"cniplugins_install_refusals_total", nil, func(v float64) bool { return v == 0 }, "0"},
		{"cniplugins_build_info", map[string]string{"version": "test", "flavour": "full"}, func(v float64) bool { return v == 1 }, "1"},
		{"cniplugins_scrape_error", nil, func(v float64) bool { return v == 0 }, "0"},
	}
	for _, w := range wants {
		if v, ok := value(fams, w.name, w.labels); !ok || !w.check(v) {
			t.Errorf("%s%v = %v (found %v), want %s", w.name, w.labels, v, ok, w.what)
		}
	}
	for name, typ := range map[string]string{"cniplugins_gc_runs_total": "COUNTER", "cniplugins_gc_released_total": "COUNTER",
		"cniplugins_gc_errors_total": "COUNTER", "cniplugins_install_refusals_total": "COUNTER", "cniplugins_gc_last_run_timestamp_seconds": "GAUGE",
		"cniplugins_install_last_timestamp_seconds": "GAUGE", "cniplugins_install_conflists": "GAUGE", "cniplugins_build_info": "GAUGE",
		"cniplugins_scrape_error": "GAUGE"} {
		if f := fams[name]; f.typ != typ || f.help == "" {
			t.Errorf("%s: %+v, want a %s with HELP", name, f, typ)
		}
	}

	t.Run("the dashboard queries only what is served", func(t *testing.T) {
		for _, e := range dashboardQueries(t, readDashboard(t)) {
			names := metricNames(e)
			if len(names) == 0 {
				t.Errorf("%q names no metric", e)
			}
			for _, name := range names {
				if len(fams[name].samples) == 0 {
					t.Errorf("%q queries %s, which the installer does not serve:\n%s", e, name, body)
				}
			}
		}
	})

	t.Run("every metric served is documented", func(t *testing.T) {
		for _, doc := range []string{"cli.md", "kubernetes.md"} {
			b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "docs", doc))
			if err != nil {
				t.Fatal(err)
			}
			for name := range fams {
				if !strings.Contains(string(b), "`"+name+"`") {
					t.Errorf("docs/%s does not name %s", doc, name)
				}
			}
		}
	})

	// A file of net.d that does not parse: the pools go, the installer's
	// series stay, the log says why once.
	if err := os.WriteFile(filepath.Join(n.netd, "99-broken.conflist"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		fams, _ = scrape(t, url)
	}
	if v, _ := value(fams, "cniplugins_scrape_error", nil); v != 1 {
		t.Errorf("scrape_error %v with a broken file in net.d, want 1", v)
	}
	if _, ok := value(fams, "cniplugins_ipam_used_addresses", nil); ok {
		t.Error("pool series served with a net.d that does not parse")
	}
	if _, ok := value(fams, "cniplugins_gc_runs_total", nil); !ok {
		t.Error("the installer's series went with the pools'")
	}
	if c := strings.Count(stderr.String(), "metrics: cannot compute the pools' usage"); c != 1 {
		t.Errorf("the usage error logged %d times for 2 scrapes, want once:\n%s", c, stderr.String())
	}

	// SIGTERM: exit 0, the listener closed.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after SIGTERM:\n%s", stderr.String())
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still answering after exiting")
	}
}
