package k8sinstall

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/install"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/k8smanifest"
)

// configMap mounts files as the kubelet mounts a ConfigMap.
func newConfigMap(t *testing.T, files map[string]string) *k8smanifest.ConfigMapVolume {
	t.Helper()
	v, err := k8smanifest.NewConfigMapVolume(t.TempDir(), files)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// update swaps the ConfigMap's content.
func update(t *testing.T, v *k8smanifest.ConfigMapVolume, files map[string]string) {
	t.Helper()
	if err := v.Update(files); err != nil {
		t.Fatal(err)
	}
}

const goodConf = `{"cniVersion": "1.0.0", "name": "tenants", "plugins": [{"type": "bridge", "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"}}]}`

// validJSON stands in for validate's checks: a file must parse.
func validJSON(name string, data []byte) []ops.Problem {
	if !strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
		return []ops.Problem{{File: name, Msg: "not a JSON object"}}
	}
	return nil
}

// install runs one pass of c.
func install1(c Confs) ([]string, error) {
	rep, err := c.Install(context.Background())
	return rep.Written, err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The ConfigMap's configuration files are installed under their names,
// only when they differ; its other entries and net.d's other files are
// never touched; an update that does not validate leaves the installed
// file as it was.
func TestConfsInstall(t *testing.T) {
	cm := newConfigMap(t, map[string]string{"10-tenants.conflist": goodConf, "README": "not a conf"})
	netDir := t.TempDir()
	other := filepath.Join(netDir, "05-other.conflist")
	if err := os.WriteFile(other, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Confs{Source: cm.Dir, NetDir: netDir, Validate: validJSON}
	written, err := install1(c)
	if err != nil || !slices.Equal(written, []string{filepath.Join(netDir, "10-tenants.conflist")}) {
		t.Fatalf("first install wrote %v (%v)", written, err)
	}
	installed := filepath.Join(netDir, "10-tenants.conflist")
	if got := readFile(t, installed); got != goodConf {
		t.Errorf("installed %q", got)
	}
	if fi, err := os.Lstat(installed); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("installed file: %v (%v), want a regular file 0644 (not the ConfigMap's link)", fi.Mode(), err)
	}
	if written, err := install1(c); err != nil || len(written) != 0 {
		t.Errorf("an unchanged ConfigMap wrote %v (%v)", written, err)
	}

	changed := strings.Replace(goodConf, "10.1.0.0/24", "10.2.0.0/24", 1)
	update(t, cm, map[string]string{"10-tenants.conflist": changed, "README": "not a conf"})
	if written, err := install1(c); err != nil || len(written) != 1 || readFile(t, installed) != changed {
		t.Errorf("after the update: wrote %v (%v), installed %q", written, err, readFile(t, installed))
	}

	update(t, cm, map[string]string{"10-tenants.conflist": "not json", "README": "not a conf"})
	written, err = install1(c)
	if err == nil || !strings.Contains(err.Error(), "10-tenants.conflist not installed") || !strings.Contains(err.Error(), "not a JSON object") || len(written) != 0 {
		t.Errorf("an invalid update: wrote %v, error %v; want nothing written and an error naming the file and the problem", written, err)
	}
	if got := readFile(t, installed); got != changed {
		t.Errorf("an invalid update replaced the installed file with %q", got)
	}
	if got := readFile(t, other); got != "someone else's" {
		t.Errorf("another file of net.d changed: %q", got)
	}
	if got := testkit.DirNames(t, netDir); !slices.Equal(got, []string{".cniplugins-installed", "05-other.conflist", "10-tenants.conflist"}) {
		t.Errorf("net.d holds %v", got)
	}
}

func TestConfsRefuseOversizeAndSpecialFiles(t *testing.T) {
	cm := newConfigMap(t, map[string]string{"10-big.conflist": "{" + strings.Repeat(" ", maxConfSize) + "}"})
	if err := os.Mkdir(filepath.Join(cm.Dir, "20-dir.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	netDir := t.TempDir()
	written, err := install1(Confs{Source: cm.Dir, NetDir: netDir})
	if err == nil || !strings.Contains(err.Error(), "larger than") || len(written) != 0 {
		t.Errorf("wrote %v, error %v; want the oversize file refused", written, err)
	}
	if got := testkit.DirNames(t, netDir); len(got) != 0 {
		t.Errorf("net.d holds %v", got)
	}
}

// stand-in binary and personality names for install.
func binary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cniplugins")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 10 ms, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("waited 10s for %s", what)
}

// Without Watch, Run installs the binary, its links and the ConfigMap's
// files, runs GC once (whose error is logged, not returned), and returns.
func TestRunOnce(t *testing.T) {
	binDir, netDir := filepath.Join(t.TempDir(), "bin"), t.TempDir()
	cm := newConfigMap(t, map[string]string{"10-tenants.conflist": goodConf})
	var log bytes.Buffer
	gcRuns := 0
	m := &Metrics{}
	err := Run(context.Background(), Options{
		Install: install.Options{Dir: binDir, Binary: binary(t, "v1"), Names: []string{"ipam-a", "ipam-b"}},
		Confs:   Confs{Source: cm.Dir, NetDir: netDir, Validate: validJSON},
		GC:      func(io.Writer) (int, error) { gcRuns++; return 0, fmt.Errorf("runtime away") },
		Log:     &log,
		Metrics: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	if gcRuns != 1 || !strings.Contains(log.String(), "gc: runtime away") {
		t.Errorf("GC ran %d times, log %q; want once, its error logged", gcRuns, log.String())
	}
	for name, want := range map[string]float64{"cniplugins_gc_runs_total": 1, "cniplugins_gc_errors_total": 1, "cniplugins_install_conflists": 1, "cniplugins_install_refusals_total": 0} {
		if got := metricValue(t, m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if metricValue(t, m, "cniplugins_install_last_timestamp_seconds") == 0 {
		t.Error("no install pass recorded")
	}
	if got := testkit.DirNames(t, binDir); !slices.Equal(got, []string{"cniplugins", "ipam-a", "ipam-b"}) {
		t.Errorf("bin dir holds %v", got)
	}
	if readFile(t, filepath.Join(binDir, "ipam-a")) != "v1" || readFile(t, filepath.Join(netDir, "10-tenants.conflist")) != goodConf {
		t.Errorf("installed files differ")
	}
	for _, want := range []string{"installed " + filepath.Join(binDir, "cniplugins"), "linked " + filepath.Join(binDir, "ipam-a"), "installed " + filepath.Join(netDir, "10-tenants.conflist")} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
	// A ConfigMap that does not validate fails the install: the init
	// container fails where the operator sees it.
	bad := newConfigMap(t, map[string]string{"10-bad.conflist": "nope"})
	err = Run(context.Background(), Options{
		Install: install.Options{Dir: binDir, Binary: binary(t, "v1"), Names: []string{"ipam-a", "ipam-b"}},
		Confs:   Confs{Source: bad.Dir, NetDir: netDir, Validate: validJSON},
	})
	if err == nil || !strings.Contains(err.Error(), "10-bad.conflist not installed") {
		t.Errorf("an invalid ConfigMap: %v", err)
	}
}

// With Watch, Run follows the ConfigMap, runs GC at the start and on its
// interval, and returns nil when ctx ends (the container's SIGTERM),
// leaving everything installed.
func TestRunWatch(t *testing.T) {
	binDir, netDir := filepath.Join(t.TempDir(), "bin"), t.TempDir()
	// A hidden key rides along with every version: its skip is said on
	// the passes whose news differ, not on every pass.
	const hidden = ".00-hidden.conflist"
	cm := newConfigMap(t, map[string]string{"10-tenants.conflist": goodConf, hidden: goodConf})
	var (
		log  testkit.SyncBuffer
		mu   sync.Mutex
		runs int
		m    = &Metrics{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Install:  install.Options{Dir: binDir, Binary: binary(t, "v1"), Names: []string{"ipam-a"}},
			Confs:    Confs{Source: cm.Dir, NetDir: netDir, Validate: validJSON},
			Watch:    true,
			Interval: 20 * time.Millisecond,
			GC: func(w io.Writer) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				runs++
				fmt.Fprintf(w, "gc pass %d\n", runs)
				return 1, nil
			},
			GCInterval: 30 * time.Millisecond,
			Log:        &log,
			Metrics:    m,
		})
	}()
	installed := filepath.Join(netDir, "10-tenants.conflist")
	waitFor(t, "the first install", func() bool { b, _ := os.ReadFile(installed); return string(b) == goodConf })
	changed := strings.Replace(goodConf, "tenants", "tenants-2", 1)
	update(t, cm, map[string]string{"10-tenants.conflist": changed, hidden: goodConf})
	waitFor(t, "the update to be installed", func() bool { b, _ := os.ReadFile(installed); return string(b) == changed })
	update(t, cm, map[string]string{"10-tenants.conflist": "broken", hidden: goodConf})
	waitFor(t, "the broken update to be refused", func() bool { return strings.Contains(log.String(), "the installed configuration stays") })
	waitFor(t, "three GC passes", func() bool { mu.Lock(); defer mu.Unlock(); return runs >= 3 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after SIGTERM: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
	if got := readFile(t, installed); got != changed {
		t.Errorf("installed %q, want the last valid update", got)
	}
	// Every pass counted: GC's and their releases (one each), the refused
	// ConfigMap's on every pass since, the conflist the last success left.
	mu.Lock()
	gcRuns := float64(runs)
	mu.Unlock()
	if got := metricValue(t, m, "cniplugins_gc_runs_total"); got != gcRuns || metricValue(t, m, "cniplugins_gc_released_total") != gcRuns {
		t.Errorf("gc runs %v released %v, want %v each", got, metricValue(t, m, "cniplugins_gc_released_total"), gcRuns)
	}
	if got := metricValue(t, m, "cniplugins_install_refusals_total"); got < 1 {
		t.Errorf("refusals %v, want the broken update's passes", got)
	}
	if got := metricValue(t, m, "cniplugins_install_conflists"); got != 1 {
		t.Errorf("conflists %v, want 1", got)
	}
	if got := testkit.DirNames(t, binDir); !slices.Equal(got, []string{"cniplugins", "ipam-a"}) {
		t.Errorf("after stopping, the bin dir holds %v", got)
	}
	if !strings.Contains(log.String(), "gc pass 1\n") || !strings.Contains(log.String(), "stopping") {
		t.Errorf("log %q", log.String())
	}
	// Passes ran every 20ms for as long as three GC passes took: the skip
	// said at the first pass and again with the refusal, the refusal once.
	if n := strings.Count(log.String(), "skipped "+hidden); n != 2 {
		t.Errorf("the hidden key's skip logged %d times, want 2 (the first pass, then beside the refusal); log %q", n, log.String())
	}
	if n := strings.Count(log.String(), "the installed configuration stays"); n != 1 {
		t.Errorf("the refusal logged %d times, want once; log %q", n, log.String())
	}
}

// validate's warnings (a quota a pod's author can get around) are the
// operator's to weigh: the conflist is installed and the warning said;
// a problem beside it refuses the file.
func TestConfsInstallWithWarnings(t *testing.T) {
	cm := newConfigMap(t, map[string]string{"10-tenants.conflist": goodConf})
	netDir := t.TempDir()
	warning := ops.Problem{File: "10-tenants.conflist", Path: "plugins[0].ipam.rules[0].quota.per", Value: "annotation:team",
		Msg: "a pod's author chooses this tenant", Severity: ops.SeverityWarning}
	problems := []ops.Problem{warning}
	c := Confs{Source: cm.Dir, NetDir: netDir, Validate: func(string, []byte) []ops.Problem { return problems }}
	rep, err := c.Install(context.Background())
	if err != nil || len(rep.Written) != 1 {
		t.Fatalf("with a warning: wrote %v (%v), want the conflist installed", rep.Written, err)
	}
	if !slices.Contains(rep.Notes, warning.String()) || !strings.Contains(warning.String(), "warning: a pod's author") {
		t.Errorf("notes %q, want the warning %q", rep.Notes, warning.String())
	}
	update(t, cm, map[string]string{"10-tenants.conflist": strings.Replace(goodConf, "10.1.0.0/24", "10.2.0.0/24", 1)})
	problems = append(problems, ops.Problem{File: "10-tenants.conflist", Msg: "unknown pool", Severity: ops.SeverityProblem})
	if rep, err := c.Install(context.Background()); err == nil || len(rep.Written) != 0 || !strings.Contains(err.Error(), "unknown pool") {
		t.Errorf("with a problem: wrote %v (%v), want a refusal naming it", rep.Written, err)
	}
	if got := readFile(t, filepath.Join(netDir, "10-tenants.conflist")); got != goodConf {
		t.Errorf("a refused update replaced the installed file with %q", got)
	}
}
