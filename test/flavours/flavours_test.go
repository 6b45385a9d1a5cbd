// Package flavours checks what each flavour of the binary links and
// answers to, and that installing one over the other, back and forth,
// leaves exactly that flavour's names.
package flavours

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// networkPackages may never enter the lean binary: each would cost every
// exec of every personality (net/http alone about 1 ms and 1.3 MB).
var networkPackages = []string{"net/http", "google.golang.org/grpc", "go.etcd.io/etcd",
	// The full flavour's own network-facing packages.
	"github.com/cniplugins/cniplugins/internal/daetcd", "github.com/cniplugins/cniplugins/internal/etcdstore",
	"github.com/cniplugins/cniplugins/internal/dockeripam",
	"github.com/cniplugins/cniplugins/internal/etcdkv", "github.com/cniplugins/cniplugins/internal/metricsserver",
	// Not network code, but as heavy: any crypto package brings the FIPS
	// module, 28 packages initialised on every exec (about 0.6 ms).
	"crypto"}

func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = testkit.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The package graph: what each main can link at all.
func TestLeanMainImportsNoNetworkPackage(t *testing.T) {
	lean := strings.Fields(goCmd(t, "list", "-deps", "./cmd/cniplugins"))
	full := strings.Fields(goCmd(t, "list", "-deps", "./cmd/cniplugins-full"))
	for _, p := range networkPackages {
		for _, dep := range lean {
			if dep == p || strings.HasPrefix(dep, p+"/") {
				t.Errorf("cmd/cniplugins depends on %s", dep)
			}
		}
	}
	for _, want := range []string{"net/http", "github.com/cniplugins/cniplugins/internal/dockeripam"} {
		if !slices.Contains(full, want) {
			t.Errorf("cmd/cniplugins-full does not depend on %s", want)
		}
	}
	for _, dep := range lean {
		if dep != "github.com/cniplugins/cniplugins/cmd/cniplugins" && !slices.Contains(full, dep) {
			t.Errorf("the full flavour is not a superset: it lacks %s", dep)
		}
	}
}

// The binaries: symbols (go tool nm) and module list (go version -m).
func TestBinariesLinkWhatTheirFlavourSays(t *testing.T) {
	dir := t.TempDir()
	lean, err := testkit.Build(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	full, err := testkit.Build(dir, "full")
	if err != nil {
		t.Fatal(err)
	}
	symbols := func(bin string) string { return goCmd(t, "tool", "nm", bin) }
	leanSyms, fullSyms := symbols(lean), symbols(full)
	for _, p := range networkPackages {
		if strings.Contains(leanSyms, " "+p+".") || strings.Contains(leanSyms, " "+p+"/") {
			t.Errorf("the lean binary holds symbols of %s", p)
		}
	}
	if !strings.Contains(fullSyms, " net/http.(*Server).Serve") {
		t.Error("the full binary holds no net/http server")
	}
	if !strings.Contains(fullSyms, " main.etcdBackend.Leases") {
		t.Error("the full binary holds no etcd backend for leases, release and gc")
	}
	if !strings.Contains(fullSyms, " github.com/cniplugins/cniplugins/internal/criclient.LiveSandboxes") {
		t.Error("the full binary holds no CRI client for gc --cri")
	}
	if !strings.Contains(fullSyms, " github.com/cniplugins/cniplugins/internal/metricsserver.Serve") {
		t.Error("the full binary holds no metrics server for k8s-install --metrics-address")
	}
	// gc --cri makes its one gRPC call with net/http: the gRPC packages
	// (and their package initialisation) stay out of every binary.
	if strings.Contains(fullSyms, " google.golang.org/grpc.") {
		t.Error("the full binary links google.golang.org/grpc")
	}
	mods := goCmd(t, "version", "-m", lean)
	for _, m := range []string{"google.golang.org/grpc", "go.etcd.io"} {
		if strings.Contains(mods, m) {
			t.Errorf("the lean binary's modules include %s:\n%s", m, mods)
		}
	}
}

func run(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// Built side by side as `make build` and the release tarball lay them
// out, with install-symlinks.sh beside them.
func sideBySide(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"", "full"} {
		if _, err := testkit.Build(dir, f); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "scripts", "install-symlinks.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "install-symlinks.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFullIsASuperset(t *testing.T) {
	dir := sideBySide(t)
	leanList, _ := run(t, filepath.Join(dir, "cniplugins"), "list")
	fullList, _ := run(t, filepath.Join(dir, "cniplugins-full"), "list")
	for _, n := range strings.Fields(leanList) {
		if !slices.Contains(strings.Fields(fullList), n) {
			t.Errorf("full flavour lacks personality %s", n)
		}
	}
	if out, _ := run(t, filepath.Join(dir, "cniplugins-full"), "--help"); !strings.Contains(out, "docker-ipam") {
		t.Errorf("full flavour's help lists no docker-ipam:\n%s", out)
	}
}

// Every name only the full flavour answers to (personalities from
// `list`, commands from --help) is refused by the lean binary with where
// it lives, and so is --etcd on the commands that take it there.
func TestLeanSaysWhereFullOnlyThingsLive(t *testing.T) {
	dir := sideBySide(t)
	lean, full := filepath.Join(dir, "cniplugins"), filepath.Join(dir, "cniplugins-full")
	names := func(bin string) []string {
		list, _ := run(t, bin, "list")
		help, _ := run(t, bin, "--help")
		_, cmds, _ := strings.Cut(help, "Available Commands:\n")
		for _, l := range strings.Split(cmds, "\n") {
			if !strings.HasPrefix(l, "  ") {
				break
			}
			list += " " + strings.Fields(l)[0]
		}
		return strings.Fields(list)
	}
	leanNames := names(lean)
	var fullOnly []string
	for _, n := range names(full) {
		if !slices.Contains(leanNames, n) {
			fullOnly = append(fullOnly, n)
		}
	}
	if !slices.Contains(fullOnly, "docker-ipam") || !slices.Contains(fullOnly, "ipam-da-etcd") {
		t.Fatalf("full-only names %v: want docker-ipam and ipam-da-etcd among them", fullOnly)
	}
	for _, n := range fullOnly {
		out, code := run(t, lean, n)
		if code != 1 || !strings.Contains(out, n+" lives in the full flavour") || !strings.Contains(out, "install-symlinks.sh --flavour full") {
			t.Errorf("lean %s: exit %d: %s", n, code, out)
		}
	}
	for _, args := range [][]string{
		{"leases", "--etcd", "http://127.0.0.1:2379"},
		{"release", "10.0.0.1", "--pool", "p", "--etcd", "http://127.0.0.1:2379", "--node", "n"},
		{"gc", "--etcd", "http://127.0.0.1:2379", "--node", "n", "--keep", "c"},
	} {
		out, code := run(t, lean, args...)
		if code != 1 || !strings.Contains(out, "--etcd needs the full flavour: run cniplugins-full") {
			t.Errorf("lean %v: exit %d: %s", args, code, out)
		}
	}
	// k8s-install's HTTP server: exit 2 before anything is installed.
	binDir := filepath.Join(t.TempDir(), "bin")
	if out, code := run(t, lean, "k8s-install", "--bin-dir", binDir, "--watch", "--metrics-address", "127.0.0.1:0"); code != 2 || !strings.Contains(out, "--metrics-address needs the full flavour") {
		t.Errorf("lean k8s-install --metrics-address: exit %d: %s", code, out)
	}
	if _, err := os.Stat(binDir); err == nil {
		t.Error("lean k8s-install --metrics-address installed before refusing")
	}
	if out, _ := run(t, lean, "leases", "--help"); !strings.Contains(out, "full flavour only") || strings.Contains(out, "--cacert") {
		t.Errorf("lean leases --help: want --etcd marked full-only and its companions hidden:\n%s", out)
	}
	// The full binary takes --etcd: an unreachable cluster is its error.
	if out, code := run(t, full, "leases", "--etcd", "http://127.0.0.1:1", "--timeout", "200ms"); code != 1 || !strings.Contains(out, "etcd unreachable") {
		t.Errorf("full leases --etcd: exit %d: %s", code, out)
	}
}

// install-symlinks.sh --flavour and `cniplugins install --flavour`, back
// and forth: the installed binary is named cniplugins, the links are its
// names, a link to a personality only the other flavour has goes, and
// repeating a switch changes nothing.
func TestSwitchingFlavours(t *testing.T) {
	dir := sideBySide(t)
	bin := t.TempDir()
	script := filepath.Join(dir, "install-symlinks.sh")
	flavourOf := func() string {
		out, _ := run(t, filepath.Join(bin, "cniplugins"), "version")
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "flavour: "); ok {
				return v
			}
		}
		return "?"
	}
	links := func() []string {
		entries, _ := os.ReadDir(bin)
		var out []string
		for _, e := range entries {
			if dest, err := os.Readlink(filepath.Join(bin, e.Name())); err == nil && dest == "cniplugins" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	steps := []struct {
		name     string
		cmd      []string
		flavour  string
		noChange bool
	}{
		{"script, lean", []string{script, bin}, "lean", false},
		{"script, full", []string{script, "--flavour", "full", bin}, "full", false},
		{"script, full again", []string{script, "--flavour=full", bin}, "full", true},
		{"script, lean again", []string{script, "--flavour", "lean", bin}, "lean", false},
		{"CLI from the lean binary, full", []string{filepath.Join(dir, "cniplugins"), "install", "--flavour", "full", bin}, "full", false},
		{"CLI from the full binary, lean", []string{filepath.Join(dir, "cniplugins-full"), "install", "--flavour", "lean", bin}, "lean", false},
		{"CLI, lean again", []string{filepath.Join(dir, "cniplugins-full"), "install", "--flavour", "lean", bin}, "lean", true},
	}
	var leanLinks []string
	for i, s := range steps {
		if s.flavour == "lean" && i > 0 {
			// As if the full flavour had installed a personality the lean
			// one lacks (ipam-da-etcd, from the etcd allocator).
			_ = os.Symlink("cniplugins", filepath.Join(bin, "ipam-da-etcd"))
		}
		out, code := run(t, s.cmd[0], s.cmd[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", s.name, code, out)
		}
		if got := flavourOf(); got != s.flavour {
			t.Errorf("%s: installed flavour %q, want %q", s.name, got, s.flavour)
		}
		if s.noChange && strings.TrimSpace(out) != "" && s.flavour == "full" {
			t.Errorf("%s: changed things: %s", s.name, out)
		}
		got := links()
		if i == 0 {
			leanLinks = got
		}
		if s.flavour == "lean" && !slices.Equal(got, leanLinks) {
			t.Errorf("%s: links %v, want the lean flavour's %v", s.name, got, leanLinks)
		}
		for _, n := range got {
			if out, code := run(t, filepath.Join(bin, n), "--bogus"); code != 0 && strings.Contains(out, "unknown personality") {
				t.Errorf("%s: link %s is unknown to the installed binary", s.name, n)
			}
		}
	}
}
