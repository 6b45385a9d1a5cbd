package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ourBuild is a stand-in for a cniplugins binary: body, then the Go build
// information a binary of this module carries (what tells it from another
// project's file of the same name).
func ourBuild(body string) []byte {
	return []byte(body + "\n" + buildInfoMagic + "\x08\x02go1.26\npath\tgithub.com/cniplugins/cniplugins/cmd/cniplugins" + moduleMark + "(devel)\t\n")
}

func setup(t *testing.T) (dir string, opts Options) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "built")
	if err := os.WriteFile(src, ourBuild("#!/bin/sh\necho binary\n"), 0o755); err != nil {
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
	if err := os.WriteFile(o.Binary, ourBuild("#!/bin/sh\necho v2\n"), 0o755); err != nil {
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

// Switching flavours back and forth: a personality only the full flavour
// has must not survive a switch back to the lean binary (it would exit 1
// as an unknown name), in both install modes, and each switch is
// idempotent. Files not ours stay.
func TestSwitchFlavourRemovesNamesTheBinaryDoesNotKnow(t *testing.T) {
	for _, copyMode := range []bool{false, true} {
		t.Run(map[bool]string{false: "symlinks", true: "copy"}[copyMode], func(t *testing.T) {
			dir, lean := setup(t)
			lean.Copy = copyMode
			full := lean
			full.Binary = filepath.Join(t.TempDir(), "full")
			if err := os.WriteFile(full.Binary, ourBuild("#!/bin/sh\necho full\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			full.Names = append([]string{}, "ipam-a", "ipam-b", "ipam-da-etcd")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			foreign := filepath.Join(dir, "host-local")
			if err := os.WriteFile(foreign, []byte("upstream"), 0o755); err != nil {
				t.Fatal(err)
			}
			for i, step := range []Options{lean, full, full, lean, lean, full} {
				var out bytes.Buffer
				step.Out = &out
				if err := Run(step); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if i == 2 || i == 4 {
					if out.Len() != 0 {
						t.Errorf("step %d (same flavour again) changed things: %s", i, out.String())
					}
				}
				want := map[string]bool{"cniplugins": true, "host-local": true}
				for _, n := range step.Names {
					want[n] = true
				}
				entries, _ := os.ReadDir(dir)
				got := map[string]bool{}
				for _, e := range entries {
					got[e.Name()] = true
				}
				if len(got) != len(want) {
					t.Errorf("step %d: dir holds %v, want %v", i, got, want)
				}
				for n := range want {
					if !got[n] {
						t.Errorf("step %d: %s missing", i, n)
					}
				}
				bin, _ := os.ReadFile(filepath.Join(dir, "ipam-a"))
				wantBin, _ := os.ReadFile(step.Binary)
				if string(bin) != string(wantBin) {
					t.Errorf("step %d: ipam-a runs %q, want %q", i, bin, wantBin)
				}
			}
			if b, _ := os.ReadFile(foreign); string(b) != "upstream" {
				t.Errorf("foreign file changed")
			}
		})
	}
}

// A `cniplugins` that is another project's file is never replaced, and
// the refusal comes before anything is written: no link is made.
func TestInstallRefusesForeignBinary(t *testing.T) {
	dir, o := setup(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, BinaryName)
	if err := os.WriteFile(foreign, []byte("#!/bin/sh\necho someone else's\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Run(o)
	if err == nil || !strings.Contains(err.Error(), "refusing to replace "+foreign) || !strings.Contains(err.Error(), "not installed by cniplugins") {
		t.Fatalf("err = %v, want a refusal naming %s", err, foreign)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "#!/bin/sh\necho someone else's\n" {
		t.Errorf("the foreign binary was replaced")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("after the refusal the dir holds %v, want the foreign file alone", names)
	}
	// A symbolic link named cniplugins is not ours either (we install a
	// regular file), wherever it points.
	if err := os.Remove(foreign); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(o.Binary, foreign); err != nil {
		t.Fatal(err)
	}
	if err := Run(o); err == nil || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("a symlink named cniplugins: %v, want a refusal", err)
	}
	if err := Run(Options{Dir: dir, Names: o.Names, Uninstall: true}); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("uninstall removed a cniplugins it did not install: %v", err)
	}
}

// A foreign file under a personality's name is refused before the binary
// is replaced: the installed binary stays the old one.
func TestInstallChecksEveryNameBeforeWriting(t *testing.T) {
	dir, o := setup(t)
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(filepath.Join(dir, BinaryName))
	if err := os.Remove(filepath.Join(dir, "ipam-b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ipam-b"), []byte("upstream"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.Binary, ourBuild("#!/bin/sh\necho v2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(o); err == nil || !strings.Contains(err.Error(), "ipam-b") {
		t.Fatalf("err = %v, want a refusal naming ipam-b", err)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, BinaryName)); !bytes.Equal(now, old) {
		t.Error("the binary was replaced although a name was refused")
	}
}

// A cniplugins binary installed by hand or by an earlier release (no
// other proof than its build information) is upgraded.
func TestInstallUpgradesOurEarlierBuild(t *testing.T) {
	dir, o := setup(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, BinaryName), ourBuild("#!/bin/sh\necho v0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	now, _ := os.ReadFile(filepath.Join(dir, BinaryName))
	want, _ := os.ReadFile(o.Binary)
	if !bytes.Equal(now, want) {
		t.Error("an earlier cniplugins build was not upgraded")
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
