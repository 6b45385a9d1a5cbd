package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// upstreamHostLocal is where Debian's containernetworking-plugins puts the
// real plugin.
const upstreamHostLocal = "/usr/lib/cni/host-local"

// binaries are the executables under test, freshly built and installed.
type binaries struct {
	cniDir string // CNI bin dir: cniplugins plus one symlink per personality
	ours   string // the cniplugins binary in cniDir
	floor  string
	// floorLinked is the floor built with -tags linked: plus every package
	// of the lean binary, initialised and unused.
	floorLinked string
	hostLocal   string // "" when not installed
	version     string // what the binary was stamped with
	// sizes in bytes, taken before the temporary directory goes
	oursSize, floorSize, hostLocalSize int64
}

// repoRoot walks up from the working directory to the module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/cniplugins/cniplugins\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the cniplugins module")
		}
		dir = parent
	}
}

// build compiles cniplugins the way the Makefile does (static, -trimpath,
// stripped), installs it with scripts/install-symlinks.sh into tmp/cni-bin,
// and builds the exec floor.
func build(root, tmp, hostLocal string) (*binaries, error) {
	b := &binaries{cniDir: filepath.Join(tmp, "cni-bin"), version: "bench-" + gitShort(root)}
	const vpkg = "github.com/cniplugins/cniplugins/internal/version"
	built := filepath.Join(tmp, "build", "cniplugins")
	ldflags := fmt.Sprintf("-s -w -buildid= -X %s.Version=%s", vpkg, b.version)
	if err := goBuild(root, built, ldflags, "./cmd/cniplugins"); err != nil {
		return nil, err
	}
	b.floor = filepath.Join(tmp, "floor", "floor")
	if err := goBuild(root, b.floor, "-s -w -buildid=", "./bench/floor"); err != nil {
		return nil, err
	}
	b.floorLinked = filepath.Join(tmp, "floor-linked", "floor")
	if err := goBuild(root, b.floorLinked, "-s -w -buildid=", "-tags=linked", "./bench/floor"); err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "install-symlinks.sh"), b.cniDir)
	cmd.Env = append(os.Environ(), "CNIPLUGINS_BIN="+built)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("install-symlinks.sh: %v\n%s", err, out)
	}
	b.ours = filepath.Join(b.cniDir, "cniplugins")
	for _, p := range []string{"ipam-delegated", "ipam-ds-static", "ipam-ds-args", "ipam-da-pools"} {
		if _, err := os.Stat(filepath.Join(b.cniDir, p)); err != nil {
			return nil, fmt.Errorf("install-symlinks.sh did not install %s: %v", p, err)
		}
	}
	if _, err := os.Stat(hostLocal); err == nil {
		b.hostLocal = hostLocal
	}
	b.oursSize, b.floorSize, b.hostLocalSize = benchstat.FileSize(b.ours), benchstat.FileSize(b.floor), benchstat.FileSize(b.hostLocal)
	return b, nil
}

func goBuild(root, out, ldflags string, pkgAndFlags ...string) error {
	pkg := pkgAndFlags[len(pkgAndFlags)-1]
	args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", out}, pkgAndFlags...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

func gitShort(root string) string {
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	cmd = exec.Command("git", "status", "--porcelain", "--untracked-files=no")
	cmd.Dir = root
	if st, err := cmd.Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += "-dirty"
	}
	return rev
}
