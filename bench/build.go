package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/benchstat"
	"github.com/cniplugins/cniplugins/internal/testkit"
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

// build compiles cniplugins and the exec floor with the Makefile's recipe
// (static, -trimpath, stripped) and installs cniplugins with
// scripts/install-symlinks.sh into tmp/cni-bin.
func build(root, tmp, hostLocal string) (*binaries, error) {
	b := &binaries{cniDir: filepath.Join(tmp, "cni-bin"), version: "bench-" + gitShort(root)}
	dir := filepath.Join(tmp, "build")
	if err := testkit.MakeIn(dir, []string{"VERSION=" + b.version}, "cniplugins", "floor", "floor-linked"); err != nil {
		return nil, err
	}
	b.floor, b.floorLinked = filepath.Join(dir, "floor"), filepath.Join(dir, "floor-linked")
	if err := testkit.Install(filepath.Join(dir, "cniplugins"), b.cniDir); err != nil {
		return nil, err
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
