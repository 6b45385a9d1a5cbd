// Package testkit is what the tests and the benchmark know of the
// repository itself: where it is (RepoRoot), how the binary is built (the
// Makefile's one recipe, through MakeIn and Build) and installed (Install,
// scripts/install-symlinks.sh). Its sub-packages are the rest of the kit:
// testbin execs the binary as a runtime does, plugintest checks a plugin's
// output contract, etcdtest and testdockerd start the daemons.
//
// Nothing outside tests, bench/ and test/ imports it.
package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the go.mod directive that marks the repository root.
const module = "module github.com/cniplugins/cniplugins"

// repoRoot walks up from the working directory (a test's package
// directory, or wherever `go run ./bench` was started) to the go.mod of
// this module.
var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && slices.Contains(strings.Split(string(b), "\n"), module) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testkit: the working directory is not inside the cniplugins module")
		}
		dir = parent
	}
})

// RepoRoot is the repository's root directory: the one way tests and the
// benchmark find it. It panics outside the repository, where none of them
// can run.
func RepoRoot() string {
	dir, err := repoRoot()
	if err != nil {
		panic(err)
	}
	return dir
}

// makeVars are the variables the Makefile reads that must not leak in from
// the environment of whoever runs the tests (a `make test VERSION=x`, or
// the jobserver of an outer make in MAKEFLAGS).
var makeVars = []string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VERSION", "COMMIT", "DIST", "DESTDIR", "SOURCE_DATE_EPOCH"}

// Make is `make -C <root> args...` with none of the Makefile's variables
// inherited from the environment.
func Make(args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", RepoRoot()}, args...)...)
	for _, kv := range os.Environ() {
		if !slices.Contains(makeVars, strings.SplitN(kv, "=", 2)[0]) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// MakeIn builds the Makefile's $(BINDIR)/... targets named by files
// ("cniplugins", "cniplugins-verbose", "cniplugins-full", "floor",
// "floor-linked") into dir, with vars ("VERSION=x") on make's command line.
func MakeIn(dir string, vars []string, files ...string) error {
	args := append([]string{"BINDIR=" + dir}, vars...)
	for _, f := range files {
		args = append(args, filepath.Join(dir, f))
	}
	if out, err := Make(args...).CombinedOutput(); err != nil {
		return fmt.Errorf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Binary is the file name of flavour's binary: "" (lean) cniplugins,
// "verbose" cniplugins-verbose, "full" cniplugins-full.
func Binary(flavour string) string {
	if flavour == "" {
		return "cniplugins"
	}
	return "cniplugins-" + flavour
}

// Build builds flavour's binary into dir as `make build` does, stamped
// version "test" and with its symbol table kept (STRIP=), and returns its
// path.
func Build(dir, flavour string) (string, error) {
	bin := Binary(flavour)
	if err := MakeIn(dir, []string{"VERSION=test", "STRIP="}, bin); err != nil {
		return "", err
	}
	return filepath.Join(dir, bin), nil
}

// Install runs scripts/install-symlinks.sh for binary into dir, the way an
// operator installs it: dir becomes a CNI bin dir.
func Install(binary, dir string) error {
	cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", "install-symlinks.sh"), dir)
	cmd.Env = append(os.Environ(), "CNIPLUGINS_BIN="+binary)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install-symlinks.sh: %v\n%s", err, b)
	}
	return nil
}

// NeedComponent stops t when a component that scripts/test-deps.sh
// installs is unusable (err non-nil). As root, where `make test` runs
// test-deps.sh and so has installed it, that is a failure: a suite that
// skips what it was meant to run passes untested. Without root (a
// developer who cannot apt-get install) it skips, saying why.
func NeedComponent(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Geteuid() == 0 {
		t.Fatalf("%v (scripts/test-deps.sh installs it; as root this test fails rather than skip)", err)
	}
	t.Skipf("SKIPPING: %v (not root: run scripts/test-deps.sh as root to install it)", err)
}
