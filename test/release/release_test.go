// Package release checks `make release` the way a user meets its output:
// the tarballs, the OCI images and SHA256SUMS in DIST, unpacked, installed
// with the install-symlinks.sh they carry, and run. It builds the release
// twice (a minute or so on a cold build cache) and the images once more
// with `make image`, to show that all are reproducible.
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

var arches = []string{"amd64", "arm64"}

// makeRelease runs `make release DIST=dist` in the repository, with none
// of the Makefile's variables inherited from the environment.
func makeRelease(t *testing.T, dist string) {
	t.Helper()
	if out, err := testkit.Make("release", "DIST="+dist).CombinedOutput(); err != nil {
		t.Fatalf("make release DIST=%s: %v\n%s", dist, err, out)
	}
}

// git runs git in the repository; "" when git cannot answer.
func git(args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = testkit.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// sums parses SHA256SUMS: file name → hex digest, in file order.
func sums(t *testing.T, dist string) ([]string, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			t.Fatalf("SHA256SUMS line %q is not `<sha256>  <file>`", line)
		}
		names = append(names, f[1])
		out[f[1]] = f[0]
	}
	return names, out
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// readTarball returns every entry of a .tar.gz, in archive order.
func readTarball(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("%s: gzip header carries name %q / time %v (gzip -n leaves both out)", path, gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h, data})
	}
}

func TestRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed; the release is built with `make release`")
	}
	root := testkit.RepoRoot()
	dist := filepath.Join(t.TempDir(), "dist")
	makeRelease(t, dist)

	version := git("describe", "--tags", "--always", "--dirty")
	if version == "" {
		version = "dev"
	}
	top := "cniplugins-" + version
	tarball := func(arch string) string { return top + "-linux-" + arch + ".tar.gz" }

	names, digests := sums(t, dist)
	if want := []string{tarball("amd64"), tarball("arm64"), top + ".oci.tar", "cniplugins-full-" + version + ".oci.tar"}; !slices.Equal(names, want) {
		t.Fatalf("SHA256SUMS lists %v, want %v", names, want)
	}
	// What the user runs after downloading.
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != digests[name] {
			t.Errorf("%s: SHA256SUMS says %s, the file hashes to %x", name, digests[name], sum)
		}
	}

	t.Run("contents", func(t *testing.T) {
		epoch, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
		if err != nil {
			t.Fatalf("commit time: %v", err)
		}
		var examples []string
		err = filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(root, "examples"), path)
			if rel == "." {
				return nil
			}
			if d.IsDir() {
				rel += "/"
			}
			examples = append(examples, rel)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{top + "/", top + "/LICENSE", top + "/README.md", top + "/cniplugins", top + "/cniplugins-full", top + "/cniplugins-verbose", top + "/examples/", top + "/install-symlinks.sh"}
		for _, ex := range examples {
			want = append(want, top+"/examples/"+ex)
		}
		// The README's reference links point into docs/, so the pages ship too.
		docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
		if err != nil || len(docs) == 0 {
			t.Fatalf("docs/*.md: %v (%d pages)", err, len(docs))
		}
		want = append(want, top+"/docs/")
		for _, d := range docs {
			want = append(want, top+"/docs/"+filepath.Base(d))
		}
		slices.Sort(want)
		executable := map[string]bool{top + "/cniplugins": true, top + "/cniplugins-verbose": true, top + "/cniplugins-full": true, top + "/install-symlinks.sh": true}
		for _, arch := range arches {
			var got []string
			for _, e := range readTarball(t, filepath.Join(dist, tarball(arch))) {
				h := e.hdr
				got = append(got, h.Name)
				mode := int64(0o644)
				if h.Typeflag == tar.TypeDir || executable[h.Name] {
					mode = 0o755
				}
				if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
					t.Errorf("%s: %s is type %c, want only files and directories", arch, h.Name, h.Typeflag)
				}
				if h.Mode&0o7777 != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != epoch {
					t.Errorf("%s: %s mode %o uid %d gid %d owner %q/%q mtime %v; want mode %o, 0/0 numeric, the commit time %v",
						arch, h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, mode, time.Unix(epoch, 0))
				}
				for _, f := range []string{"LICENSE", "README.md", "install-symlinks.sh"} {
					src := filepath.Join(root, f)
					if f == "install-symlinks.sh" {
						src = filepath.Join(root, "scripts", f)
					}
					if h.Name == top+"/"+f {
						if b, _ := os.ReadFile(src); !bytes.Equal(b, e.data) {
							t.Errorf("%s: %s differs from the repository's %s", arch, h.Name, src)
						}
					}
				}
				if h.Name == top+"/LICENSE" && (!bytes.Contains(e.data, []byte("Apache License\n                           Version 2.0, January 2004")) || !bytes.Contains(e.data, []byte("The cniplugins authors"))) {
					t.Errorf("%s: LICENSE is not the Apache License 2.0 of the cniplugins authors", arch)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s tarball holds\n%v\nwant (sorted)\n%v", arch, got, want)
			}
		}
	})

	t.Run("binaries are static ELF for their architecture", func(t *testing.T) {
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
		for _, arch := range arches {
			for _, e := range readTarball(t, filepath.Join(dist, tarball(arch))) {
				if e.hdr.Name != top+"/cniplugins" && e.hdr.Name != top+"/cniplugins-verbose" && e.hdr.Name != top+"/cniplugins-full" {
					continue
				}
				f, err := elf.NewFile(bytes.NewReader(e.data))
				if err != nil {
					t.Fatalf("%s %s: not ELF: %v", arch, e.hdr.Name, err)
				}
				if f.Machine != machine[arch] || f.Class != elf.ELFCLASS64 {
					t.Errorf("%s %s: machine %v class %v, want %v 64-bit", arch, e.hdr.Name, f.Machine, f.Class, machine[arch])
				}
				for _, p := range f.Progs {
					if p.Type == elf.PT_INTERP {
						t.Errorf("%s %s: has an ELF interpreter: not static (CGO_ENABLED=0)", arch, e.hdr.Name)
					}
				}
				if f.Section(".symtab") != nil {
					t.Errorf("%s %s: has a symbol table: not stripped (-s -w)", arch, e.hdr.Name)
				}
			}
		}
	})

	t.Run("unpack, install-symlinks.sh, ADD and DEL", func(t *testing.T) {
		if runtime.GOOS != "linux" || !slices.Contains(arches, runtime.GOARCH) {
			t.Fatalf("this machine (%s/%s) runs none of the release's binaries", runtime.GOOS, runtime.GOARCH)
		}
		unpacked := t.TempDir()
		if out, err := exec.Command("tar", "-xzf", filepath.Join(dist, tarball(runtime.GOARCH)), "-C", unpacked).CombinedOutput(); err != nil {
			t.Fatalf("tar -xzf: %v\n%s", err, out)
		}
		binDir := filepath.Join(t.TempDir(), "cni", "bin")
		install := exec.Command(filepath.Join(unpacked, top, "install-symlinks.sh"), binDir)
		install.Env = withoutBinOverride()
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("install-symlinks.sh %s: %v\n%s", binDir, err, out)
		}
		for _, name := range []string{"ipam-delegated", "ipam-ds-static", "ipam-da-pools"} {
			if target, err := os.Readlink(filepath.Join(binDir, name)); err != nil || target != "cniplugins" {
				t.Errorf("%s in %s: link to %q (%v), want a relative link to cniplugins", name, binDir, target, err)
			}
		}
		out, err := exec.Command(filepath.Join(binDir, "cniplugins"), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), version) {
			t.Errorf("installed `cniplugins version`: %q (%v), want it to name %s", out, err, version)
		}

		dataDir := t.TempDir()
		conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"release-net","ipam":{"type":"ipam-da-pools","ranges":[[{"subnet":"10.199.250.0/24"}]],"dataDir":%q}}`, dataDir)
		call := testbin.Call{
			Plugin: "ipam-da-pools", Command: "ADD", ContainerID: "release-ctr", IfName: "eth0",
			Netns: "/var/run/netns/release-test", Path: binDir, Stdin: []byte(conf),
		}
		r := testbin.MustSucceed(t, call)
		var res struct {
			CNIVersion string `json:"cniVersion"`
			IPs        []struct {
				Address string `json:"address"`
				Gateway string `json:"gateway"`
			} `json:"ips"`
		}
		if err := json.Unmarshal(r.Stdout, &res); err != nil || res.CNIVersion != "1.0.0" || len(res.IPs) != 1 ||
			res.IPs[0].Address != "10.199.250.2/24" || res.IPs[0].Gateway != "10.199.250.1" {
			t.Fatalf("ADD printed %s (%v), want 10.199.250.2/24 via 10.199.250.1", r.Stdout, err)
		}
		reservation := filepath.Join(dataDir, "release-net", "10.199.250.2")
		if b, err := os.ReadFile(reservation); err != nil || string(b) != "release-ctr\r\neth0" {
			t.Errorf("reservation %s: %q (%v)", reservation, b, err)
		}
		call.Command = "DEL"
		testbin.MustSucceed(t, call)
		if _, err := os.Stat(reservation); !os.IsNotExist(err) {
			t.Errorf("after DEL, %s: %v; want it gone", reservation, err)
		}

		// The full flavour from the same tarball, under the same name.
		install = exec.Command(filepath.Join(unpacked, top, "install-symlinks.sh"), "--flavour", "full", binDir)
		install.Env = withoutBinOverride()
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("install-symlinks.sh --flavour full: %v\n%s", err, out)
		}
		out, err = exec.Command(filepath.Join(binDir, "cniplugins"), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "flavour: full") {
			t.Errorf("after --flavour full, `cniplugins version`: %q (%v)", out, err)
		}
		call.Command = "ADD"
		testbin.MustSucceed(t, call)
		call.Command = "DEL"
		testbin.MustSucceed(t, call)
	})

	t.Run("images hold the tarball's binaries", func(t *testing.T) {
		checkImages(t, dist, version)
	})

	t.Run("make image gives the release's images", func(t *testing.T) {
		checkMakeImage(t, dist, version)
	})

	t.Run("reproducible", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "dist")
		makeRelease(t, again)
		first, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
		second, _ := os.ReadFile(filepath.Join(again, "SHA256SUMS"))
		t.Logf("first run:\n%ssecond run:\n%s", first, second)
		if !bytes.Equal(first, second) {
			t.Errorf("two releases from one tree differ (was the tree edited between them?)")
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}  `).Match(first) {
			t.Errorf("SHA256SUMS %q", first)
		}
	})
}

// withoutBinOverride is the environment without CNIPLUGINS_BIN, so that
// install-symlinks.sh uses the binaries beside it.
func withoutBinOverride() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNIPLUGINS_BIN=") {
			env = append(env, kv)
		}
	}
	return env
}
