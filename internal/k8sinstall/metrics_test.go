package k8sinstall

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/metricsserver"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// metricValue is the value of the unlabelled series name in m.
func metricValue(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	for _, f := range m.Families() {
		if f.Name == name && len(f.Samples) == 1 {
			return f.Samples[0].Value
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// The exposition as the full flavour's server serves it, scrape after
// scrape, while GC and install passes move the counters and the pools'
// usage fails and recovers.
func TestExpositionServed(t *testing.T) {
	quota := 5
	usage := []ops.Usage{{Kind: "pool", Name: "team-a", Networks: []string{"k8s-tenants"}, Size: 10, Used: 3, Free: 7,
		Tenants: []ops.TenantUsage{{Tenant: "namespace=team-a", InUse: 3, Quota: &quota}}}}
	var usageErr error
	note := "" // what the usage says of the networks it leaves out
	var log strings.Builder
	m := &Metrics{}
	e := &Exposition{
		Usages:  func(notes io.Writer) ([]ops.Usage, error) { io.WriteString(notes, note); return usage, usageErr },
		Metrics: m, Version: "v9.9.9", Flavour: "full", Log: &log,
	}
	// Scraped in the test's goroutine: the steps change what Usages
	// returns between scrapes without a lock.
	h := metricsserver.Handler(e.Write, &log)

	t0, t1 := time.Unix(1700000000, 500e6), time.Unix(1700000100, 0)
	poolLine := `cniplugins_ipam_used_addresses{kind="pool",name="team-a",range_set="",networks="k8s-tenants"} 3`
	steps := []struct {
		name   string
		do     func()
		want   []string // lines of the exposition
		absent []string // prefixes no line has
		log    string   // what the log gained
	}{
		{name: "fresh", do: func() {}, want: []string{
			poolLine,
			`cniplugins_tenant_addresses{tenant="namespace=team-a",pool="team-a"} 3`,
			`cniplugins_tenant_quota{tenant="namespace=team-a",pool="team-a"} 5`,
			"# TYPE cniplugins_gc_runs_total counter", "cniplugins_gc_runs_total 0", "cniplugins_gc_released_total 0",
			"cniplugins_gc_errors_total 0", "cniplugins_gc_last_run_timestamp_seconds 0",
			"cniplugins_install_last_timestamp_seconds 0", "cniplugins_install_conflists 0", "cniplugins_install_refusals_total 0",
			`cniplugins_build_info{version="v9.9.9",flavour="full"} 1`, "# TYPE cniplugins_scrape_error gauge", "cniplugins_scrape_error 0",
		}},
		{name: "a GC pass released 2", do: func() { m.gcPass(2, nil, t0) }, want: []string{
			"cniplugins_gc_runs_total 1", "cniplugins_gc_released_total 2", "cniplugins_gc_errors_total 0",
			"cniplugins_gc_last_run_timestamp_seconds 1.7000000005e+09",
		}},
		{name: "a GC pass failed", do: func() { m.gcPass(0, errors.New("runtime away"), t1) }, want: []string{
			"cniplugins_gc_runs_total 2", "cniplugins_gc_released_total 2", "cniplugins_gc_errors_total 1",
			"cniplugins_gc_last_run_timestamp_seconds 1.7000001e+09",
		}},
		{name: "an install pass", do: func() { m.installPass(Report{Installed: 2}, nil, t0) }, want: []string{
			"cniplugins_install_last_timestamp_seconds 1.7000000005e+09", "cniplugins_install_conflists 2", "cniplugins_install_refusals_total 0",
		}},
		{name: "a refused ConfigMap keeps what is installed", do: func() {
			m.installPass(Report{}, refused("/cm", errors.New("10-x.conflist not installed")), t1)
		}, want: []string{
			"cniplugins_install_last_timestamp_seconds 1.7000000005e+09", "cniplugins_install_conflists 2", "cniplugins_install_refusals_total 1",
		}},
		{name: "a pass cut by SIGTERM is no refusal", do: func() { m.installPass(Report{}, context.Canceled, t1) }, want: []string{
			"cniplugins_install_conflists 2", "cniplugins_install_refusals_total 1",
		}},
		{name: "a network left out is logged", do: func() { note = "10-x.conflist: network x keeps its keys under /x/\n" },
			want: []string{poolLine}, log: "metrics: 10-x.conflist: network x keeps its keys under /x/\n"},
		{name: "and not again while it stays out", do: func() {}, want: []string{poolLine}},
		{name: "usage fails: the process's series stay", do: func() { usageErr = errors.New("10-x.conflist: bad") },
			want:   []string{"cniplugins_scrape_error 1", "cniplugins_gc_runs_total 2", `cniplugins_build_info{version="v9.9.9",flavour="full"} 1`},
			absent: []string{"cniplugins_ipam_", "cniplugins_tenant_", "# HELP cniplugins_ipam_"},
			log:    "metrics: cannot compute the pools' usage (served without it until this changes): 10-x.conflist: bad\n"},
		{name: "the same error again is not logged again", do: func() {},
			want: []string{"cniplugins_scrape_error 1"}, absent: []string{"cniplugins_ipam_"}},
		{name: "another error is", do: func() { usageErr = errors.New("data dir gone") },
			want: []string{"cniplugins_scrape_error 1"},
			log:  "metrics: cannot compute the pools' usage (served without it until this changes): data dir gone\n"},
		{name: "usage back", do: func() { usageErr = nil },
			want: []string{"cniplugins_scrape_error 0", poolLine},
			log:  "metrics: the pools' usage is read again\n"},
		{name: "another network left out is", do: func() { note = "a\nb\n" },
			want: []string{poolLine}, log: "metrics: a\nmetrics: b\n"},
	}
	for _, s := range steps {
		s.do()
		before := log.Len()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		res := rec.Result()
		body := rec.Body.String()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != metricsserver.ContentType {
			t.Fatalf("%s: %d %s", s.name, res.StatusCode, res.Header.Get("Content-Type"))
		}
		lines := strings.Split(body, "\n")
		for _, w := range s.want {
			if !strings.Contains("\n"+body, "\n"+w+"\n") {
				t.Errorf("%s: no line %q in\n%s", s.name, w, body)
			}
		}
		for _, a := range s.absent {
			for _, l := range lines {
				if strings.HasPrefix(l, a) {
					t.Errorf("%s: line %q served", s.name, l)
				}
			}
		}
		if got := log.String()[before:]; got != s.log {
			t.Errorf("%s: logged %q, want %q", s.name, got, s.log)
		}
	}
}

// A nil *Metrics (no --metrics-address) records nothing and serves 0s.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.gcPass(1, nil, time.Now())
	m.installPass(Report{Installed: 1}, nil, time.Now())
	if v := metricValue(t, m, "cniplugins_gc_runs_total"); v != 0 {
		t.Errorf("gc runs %v", v)
	}
}
