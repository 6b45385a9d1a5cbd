package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func setup(t *testing.T) (dir string, opts Options) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "built")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "bin")
	return dir, Options{Dir: dir, Binary: src, Names: []string{"ipam-a", "ipam-b"}}
}

func linkOf(t *testing.T, path string) string {
	t.Helper()
	dest, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return dest
}

func TestInstallSymlinksIdempotent(t *testing.T) {
	dir, o := setup(t)
	var out bytes.Buffer
	o.Out = &out
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	for _, n := range o.Names {
		if got := linkOf(t, filepath.Join(dir, n)); got != "cniplugins" {
			t.Errorf("%s -> %q, want relative link to cniplugins", n, got)
		}
	}
	out.Reset()
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("second install changed things: %s", out.String())
	}
}

func TestInstallNeverReplacesForeignFiles(t *testing.T) {
	dir, o := setup(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "ipam-b")
	if err := os.WriteFile(foreign, []byte("upstream"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Run(o)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v, want a refusal mentioning --force", err)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "upstream" {
		t.Fatalf("foreign file changed without --force")
	}
	o.Force = true
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	if linkOf(t, foreign) != "cniplugins" {
		t.Errorf("--force did not replace the foreign file")
	}
}

func TestInstallCopyAndSwitchBack(t *testing.T) {
	dir, o := setup(t)
	o.Copy = true
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	bin, _ := os.Stat(filepath.Join(dir, BinaryName))
	for _, n := range o.Names {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !os.SameFile(fi, bin) {
			t.Errorf("%s is not a hard link to the binary", n)
		}
	}
	o.Copy = false
	if err := Run(o); err != nil {
		t.Fatalf("switching to symlinks: %v", err)
	}
	if linkOf(t, filepath.Join(dir, "ipam-a")) != "cniplugins" {
		t.Errorf("copy install not replaced by symlink")
	}
}

func TestUpgradeKeepsHardLinksOurs(t *testing.T) {
	dir, o := setup(t)
	o.Copy = true
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.Binary, []byte("#!/bin/sh\necho v2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(o); err != nil {
		t.Fatalf("upgrade refused its own hard links: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ipam-a")); !strings.Contains(string(b), "v2") {
		t.Errorf("hard link still holds the old binary")
	}
}

func TestUninstallRemovesOnlyOurs(t *testing.T) {
	dir, o := setup(t)
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "host-local")
	if err := os.WriteFile(other, []byte("upstream"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Names = append(o.Names, "host-local")
	o.Uninstall = true
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "host-local" {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left %v, want only host-local", names)
	}
}
