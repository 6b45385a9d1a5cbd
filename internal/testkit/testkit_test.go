package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRootHoldsTheMakefile(t *testing.T) {
	root := RepoRoot()
	for _, f := range []string{"go.mod", "Makefile", filepath.Join("scripts", "install-symlinks.sh")} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("RepoRoot() = %s: %v", root, err)
		}
	}
}

func TestMakeInheritsNoMakefileVariable(t *testing.T) {
	t.Setenv("VERSION", "from-the-environment")
	t.Setenv("MAKEFLAGS", "-j4 --jobserver-auth=fifo:/nonexistent")
	t.Setenv("GOFLAGS", "-mod=mod")
	cmd := Make("-n", "bin/cniplugins")
	if cmd.Dir != "" || cmd.Args[3] != RepoRoot() {
		t.Errorf("args %q: want make -C <root>", cmd.Args)
	}
	kept := map[string]bool{}
	for _, kv := range cmd.Env {
		kept[kv] = true
	}
	if kept["VERSION=from-the-environment"] || kept["MAKEFLAGS=-j4 --jobserver-auth=fifo:/nonexistent"] || !kept["GOFLAGS=-mod=mod"] {
		t.Errorf("environment %q", cmd.Env)
	}
}
