package integration

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the operators' CLI tests")

// cliRun execs the installed binary by its own name, as an operator does.
func cliRun(args ...string) testbin.Reply {
	return testbin.Run(testbin.Call{Plugin: "cniplugins", Path: binDir, Argv: args})
}

// opsLab is a conf dir and a data dir with networks whose state is built
// by real ADDs.
type opsLab struct {
	t       *testing.T
	root    string
	confDir string
	dataDir string
	nets    map[string]labNet
}

type labNet struct {
	plugin string // the IPAM plugin to exec
	conf   []byte // the plugin config a runtime sends
}

func newOpsLab(t *testing.T) *opsLab {
	root := t.TempDir()
	l := &opsLab{t: t, root: root, confDir: filepath.Join(root, "net.d"), dataDir: filepath.Join(root, "data"), nets: map[string]labNet{}}
	for _, d := range []string{l.confDir, l.dataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// network writes a conflist for name with the given ipam section (the
// placeholder DATA is the lab's data dir) and remembers how to ADD on it.
func (l *opsLab) network(file, name, ipam string) {
	l.t.Helper()
	ipam = strings.ReplaceAll(ipam, "DATA", l.dataDir)
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(ipam), &probe); err != nil {
		l.t.Fatalf("ipam of %s: %v", name, err)
	}
	list := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[{"type":"bridge","bridge":"cni-x","ipam":%s}]}`, name, ipam)
	if err := os.WriteFile(filepath.Join(l.confDir, file), []byte(list), 0o644); err != nil {
		l.t.Fatal(err)
	}
	l.nets[name] = labNet{plugin: probe.Type, conf: []byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"type":"bridge","bridge":"cni-x","ipam":%s}`, name, ipam))}
}

// call is a CNI call on network name, by our binary or, for host-local,
// by Debian's upstream plugin.
func (l *opsLab) call(cmd, name, id, ifname string) testbin.Reply {
	n, ok := l.nets[name]
	if !ok {
		l.t.Fatalf("no network %s", name)
	}
	c := testbin.Call{Plugin: n.plugin, Command: cmd, ContainerID: id, IfName: ifname, Netns: "/var/run/netns/" + id, Path: binDir, Stdin: n.conf}
	if n.plugin == "host-local" {
		c.Plugin, c.Path = filepath.Base(upstreamHostLocal), filepath.Dir(upstreamHostLocal)
	}
	return testbin.Run(c)
}

func (l *opsLab) mustAdd(name, id, ifname string) string {
	l.t.Helper()
	r := l.call("ADD", name, id, ifname)
	if r.Exit != 0 {
		l.t.Fatalf("ADD %s %s/%s: exit %d: %s %s", name, id, ifname, r.Exit, r.Stdout, r.Stderr)
	}
	return parseResult(l.t, r.Stdout).addrs()
}

// cli runs the CLI and fails unless it exits with want.
func (l *opsLab) cli(want int, args ...string) string {
	l.t.Helper()
	r := cliRun(args...)
	if r.Exit != want {
		l.t.Fatalf("cniplugins %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Exit, want, r.Stdout, r.Stderr)
	}
	return strings.ReplaceAll(string(r.Stdout), l.root, "$LAB")
}

// touchAll gives every reservation file one mtime, so that output
// showing "since" is reproducible. A file's mtime is not its directory's:
// the index stamps stay valid.
func (l *opsLab) touchAll(at time.Time) {
	l.t.Helper()
	err := filepath.WalkDir(l.dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "_index") {
			return err
		}
		return os.Chtimes(path, at, at)
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// golden compares got with testdata/ops/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "ops", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}

// poolsJSON runs `pools -o json` with args and gives each row as
// "NAME USED[ TENANT INUSE/QUOTA]..." (a quota of -1: none).
func poolsJSON(t *testing.T, args ...string) []string {
	t.Helper()
	r := cliRun(append([]string{"pools", "-o", "json"}, args...)...)
	var us []struct {
		Name    string `json:"name"`
		Used    int    `json:"used"`
		Tenants []struct {
			Tenant string `json:"tenant"`
			InUse  int    `json:"inUse"`
			Quota  *int   `json:"quota"`
		} `json:"tenants"`
	}
	if r.Exit != 0 || json.Unmarshal(r.Stdout, &us) != nil {
		t.Fatalf("pools: exit %d %s %s", r.Exit, r.Stdout, r.Stderr)
	}
	var rows []string
	for _, u := range us {
		row := fmt.Sprintf("%s %d", u.Name, u.Used)
		for _, tu := range u.Tenants {
			q := -1
			if tu.Quota != nil {
				q = *tu.Quota
			}
			row += fmt.Sprintf(" %s %d/%d", tu.Tenant, tu.InUse, q)
		}
		rows = append(rows, row)
	}
	return rows
}
