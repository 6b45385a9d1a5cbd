package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

const upstreamHostLocal = "/usr/lib/cni/host-local"

func needHostLocal(t *testing.T) {
	t.Helper()
	_, err := os.Stat(upstreamHostLocal)
	testkit.NeedComponent(t, err)
}

// op is one step of a sequence a runtime could send.
type op struct {
	cmd, id, args string
}

// compatSequence exercises round robin, requested addresses, release and
// reuse, and a wrap-around in a small range.
var compatSequence = []op{
	{"ADD", "c1", ""}, {"ADD", "c2", ""}, {"ADD", "c3", "IP=10.88.0.9"}, {"ADD", "c4", ""},
	{"DEL", "c2", ""}, {"ADD", "c5", ""}, {"CHECK", "c1", ""}, {"DEL", "c1", ""},
	{"ADD", "c6", ""}, {"ADD", "c7", ""}, {"DEL", "never", ""}, {"ADD", "c8", ""}, {"DEL", "c3", ""}, {"ADD", "c9", ""},
}

func compatConf(dataDir string) []byte {
	return []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"compat","ipam":{"type":"host-local","dataDir":%q,
		"ranges":[[{"subnet":"10.88.0.0/28","rangeStart":"10.88.0.3","rangeEnd":"10.88.0.12"}],[{"subnet":"fd88::/124"}]],
		"routes":[{"dst":"0.0.0.0/0"}]}}`, dataDir))
}

// runSequence plays seq on dataDir, choosing the plugin for step i with
// pick, and returns a transcript of results.
func runSequence(t *testing.T, dataDir string, pick func(i int) string) []string {
	t.Helper()
	results := map[string]string{} // id -> last ADD stdout, for CHECK/DEL prevResult
	var transcript []string
	for i, o := range compatSequence {
		plugin := pick(i)
		conf := compatConf(dataDir)
		if prev, ok := results[o.id]; ok && o.cmd != "ADD" {
			conf = append(conf[:len(conf)-1], []byte(`,"prevResult":`+prev+`}`)...)
		}
		c := testbin.Call{Plugin: "ipam-da-pools", Command: o.cmd, ContainerID: o.id, IfName: "eth0", Netns: "/var/run/netns/x", Path: binDir, Args: o.args, Stdin: conf}
		if plugin == "host-local" {
			c.Plugin, c.Path = filepath.Base(upstreamHostLocal), filepath.Dir(upstreamHostLocal)
		}
		r := testbin.Run(c)
		line := fmt.Sprintf("%s %s exit=%d", o.cmd, o.id, r.Exit)
		if o.cmd == "ADD" && r.Exit == 0 {
			results[o.id] = string(r.Stdout)
			line += " " + parseResult(t, r.Stdout).addrs()
		}
		if r.Exit != 0 {
			line += fmt.Sprintf(" code=%d", r.Err().Code)
		}
		transcript = append(transcript, line)
	}
	return transcript
}

// stateFiles is the host-local-visible state: name -> content.
func stateFiles(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%q", e.Name(), b))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func TestSameResultsAndFilesAsHostLocal(t *testing.T) {
	needHostLocal(t)
	ref := t.TempDir()
	want := runSequence(t, ref, func(int) string { return "host-local" })
	wantFiles := stateFiles(t, filepath.Join(ref, "compat"))
	pickers := map[string]func(int) string{
		"ipam-da-pools alone":         func(int) string { return "ours" },
		"alternating, host-local 1st": func(i int) string { return []string{"host-local", "ours"}[i%2] },
		"alternating, ours 1st":       func(i int) string { return []string{"ours", "host-local"}[i%2] },
		"take over half-way": func(i int) string {
			return map[bool]string{true: "ours", false: "host-local"}[i >= len(compatSequence)/2]
		},
		"hand back half-way": func(i int) string {
			return map[bool]string{true: "host-local", false: "ours"}[i >= len(compatSequence)/2]
		},
	}
	for name, pick := range pickers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			got := runSequence(t, dir, pick)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("transcript differs from host-local's:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if files := stateFiles(t, filepath.Join(dir, "compat")); files != wantFiles {
				t.Errorf("state files differ:\n got:\n%s\nwant:\n%s", files, wantFiles)
			}
		})
	}
}

// State written by host-local before 0.8 holds only the container ID: DEL
// releases it, ADD's duplicate check sees it, GC matches it by container.
func TestLegacyIDOnlyReservations(t *testing.T) {
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "compat")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for ip, id := range map[string]string{"10.88.0.3": "old1", "10.88.0.4": "old2", "fd88::2": "old1"} {
		if err := os.WriteFile(filepath.Join(dir, ip), []byte(id), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := compatConf(dataDir)
	conf = []byte(strings.Replace(string(conf), `"type":"host-local"`, `"type":"ipam-da-pools"`, 1))
	if e := testbin.Run(call("ipam-da-pools", "ADD", "old2", conf)).Err(); e == nil || e.Code != 102 {
		t.Errorf("ADD for a container holding a legacy reservation: %+v, want 102", e)
	}
	testbin.MustSucceed(t, call("ipam-da-pools", "DEL", "old1", conf))
	if got := reservations(t, dir); got != "10.88.0.4" {
		t.Errorf("after DEL old1: %s, want only old2's legacy file", got)
	}
	gc := call("ipam-da-pools", "GC", "", []byte(strings.Replace(string(conf), `"cniVersion":"1.0.0"`, `"cniVersion":"1.1.0","cni.dev/valid-attachments":[{"containerID":"old2","ifname":"net1"}]`, 1)))
	gc.ContainerID, gc.IfName, gc.Netns = "", "", ""
	testbin.MustSucceed(t, gc)
	if got := reservations(t, dir); got != "10.88.0.4" {
		t.Errorf("GC released a legacy file whose container is still valid: %s", got)
	}
}
