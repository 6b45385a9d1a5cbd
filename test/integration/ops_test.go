package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

// goldenLab builds state with real ADDs: two networks sharing a pool (one
// with a second pool of its own), a standalone dual-stack network, a
// directory written by Debian's upstream host-local, a legacy id-only
// file and a reservation held by a non-CNI owner.
func goldenLab(t *testing.T) *opsLab {
	needHostLocal(t)
	l := newOpsLab(t)
	l.network("10-blue.conflist", "blue-net", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"shared","subnet":"10.77.0.0/28"},{"name":"blue"}],"poolDefinitions":{"blue":{"ranges":[{"subnet":"10.77.1.0/29"}],"exclude":["10.77.1.6"]}}}`)
	l.network("20-red.conflist", "red-net", `{"type":"ipam-delegated","delegates":["ipam-ds-static","ipam-da-pools"],"dataDir":"DATA",
		"pools":[{"name":"shared","subnet":"10.77.0.0/28"}]}`)
	l.network("30-plain.conflist", "plain", `{"type":"ipam-da-pools","dataDir":"DATA","ranges":[[{"subnet":"10.77.2.0/29"}],[{"subnet":"fd77::/124"}]]}`)
	l.network("40-hl.conflist", "hl-net", `{"type":"host-local","dataDir":"DATA","ranges":[[{"subnet":"10.77.3.0/29"}]]}`)
	l.mustAdd("blue-net", "ctr-a", "eth0")
	l.mustAdd("blue-net", "ctr-b", "eth0")
	l.mustAdd("red-net", "ctr-c", "eth0")
	l.mustAdd("red-net", "ctr-c", "net1")
	l.mustAdd("plain", "ctr-d", "eth0")
	l.mustAdd("hl-net", "ctr-e", "eth0")
	l.mustAdd("hl-net", "ctr-f", "eth0")
	// What a host-local older than 0.8 left: the container ID alone.
	writeFile(t, filepath.Join(l.dataDir, "hl-net", "10.77.3.6"), "old-ctr")
	// A non-CNI owner's reservation (a Docker endpoint), in the shared pool.
	writeFile(t, filepath.Join(l.dataDir, "_pools", "shared", "10.77.0.14"), "_docker\r\nep-5f3a\r\ndocker-net")
	l.touchAll(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return l
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpsGoldenOutputs(t *testing.T) {
	l := goldenLab(t)
	data, conf := "--data-dir="+l.dataDir, "--conf-dir="+l.confDir
	for _, g := range []struct {
		file string
		args []string
	}{
		{"leases.txt", []string{"leases", data}},
		{"leases.json", []string{"leases", data, "-o", "json"}},
		{"leases-network.txt", []string{"leases", data, "--network", "red-net", "--no-headers"}},
		{"leases-pool.txt", []string{"leases", data, "--pool", "shared"}},
		{"leases-container.txt", []string{"leases", data, "--container", "ctr-"}},
		{"pools.txt", []string{"pools", conf}},
		{"pools.json", []string{"pools", conf, "-o", "json"}},
		{"pools.prom", []string{"pools", conf, "-o", "prom"}},
		{"fsck.txt", []string{"fsck", data, conf}},
	} {
		t.Run(g.file, func(t *testing.T) { golden(t, g.file, l.cli(0, g.args...)) })
	}
}

// The JSON outputs keep their documented schema: every key present.
func TestOpsJSONSchema(t *testing.T) {
	l := goldenLab(t)
	var leases []map[string]any
	if err := json.Unmarshal([]byte(l.cli(0, "leases", "--data-dir", l.dataDir, "-o", "json")), &leases); err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{}
	for _, le := range leases {
		for _, k := range []string{"address", "network", "pool", "containerID", "ifname", "owner", "since", "problem"} {
			if _, ok := le[k]; !ok {
				t.Errorf("lease %v lacks %q", le, k)
			}
		}
		owners[le["owner"].(string)]++
	}
	if owners["cni"] != 10 || owners["legacy"] != 1 || owners["docker"] != 1 {
		t.Errorf("owner kinds = %v, want 10 cni, 1 legacy, 1 docker", owners)
	}
	var pools []map[string]any
	if err := json.Unmarshal([]byte(l.cli(0, "pools", "--conf-dir", l.confDir, "-o", "json")), &pools); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		for _, k := range []string{"kind", "name", "rangeSet", "networks", "ranges", "dir", "size", "used", "free", "percentUsed", "exhausted"} {
			if _, ok := p[k]; !ok {
				t.Errorf("pool %v lacks %q", p, k)
			}
		}
	}
}

// -o prom parses with Prometheus's own parser, with the values pools
// reports.
func TestOpsPromParses(t *testing.T) {
	l := goldenLab(t)
	out := l.cli(0, "pools", "--conf-dir", l.confDir, "-o", "prom")
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, out)
	}
	want := map[string]float64{ // shared pool: 13 addresses, 5 used (4 CNI + the Docker endpoint)
		"cniplugins_ipam_size_addresses": 13, "cniplugins_ipam_used_addresses": 5,
		"cniplugins_ipam_free_addresses": 8, "cniplugins_ipam_exhausted": 0,
	}
	for name, v := range want {
		f, ok := families[name]
		if !ok || f.GetHelp() == "" || f.GetType().String() != "GAUGE" {
			t.Fatalf("family %s missing, without HELP, or not a gauge: %v", name, f)
		}
		found := false
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["kind"] == "pool" && labels["name"] == "shared" {
				found = true
				if got := m.GetGauge().GetValue(); got != v || labels["networks"] != "blue-net,red-net" {
					t.Errorf("%s{shared} = %v %v, want %v", name, got, labels, v)
				}
			}
		}
		if !found {
			t.Errorf("%s has no series for pool shared", name)
		}
	}
	if n := len(families["cniplugins_ipam_used_addresses"].GetMetric()); n != 5 {
		t.Errorf("%d series, want 5 (pools shared and blue, plain's two range sets, hl-net's)", n)
	}
}

// completion is cobra's: a script per shell, and the dynamic completion it
// calls knows the operators' commands and their flags.
func TestOpsCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := cliRun("completion", shell)
		if r.Exit != 0 || !strings.Contains(string(r.Stdout), "cniplugins") {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.Exit, len(r.Stdout))
		}
	}
	r := cliRun("__complete", "")
	for _, c := range []string{"leases", "pools", "release", "gc", "fsck", "validate", "completion"} {
		if !strings.Contains(string(r.Stdout), "\n"+c+"\t") && !strings.HasPrefix(string(r.Stdout), c+"\t") {
			t.Errorf("completion does not offer %s:\n%s", c, r.Stdout)
		}
	}
	if r := cliRun("__complete", "pools", "--"); !strings.Contains(string(r.Stdout), "--conf-dir") {
		t.Errorf("flag completion of pools:\n%s", r.Stdout)
	}
}
