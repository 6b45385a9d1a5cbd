package ociimage

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var epoch = time.Unix(1764000000, 0)

// spec is a two-architecture image of stand-in binaries and a small
// examples tree.
func spec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	bins := map[string]string{}
	for _, arch := range []string{"arm64", "amd64"} {
		p := filepath.Join(dir, arch)
		if err := os.WriteFile(p, []byte("binary for "+arch), 0o700); err != nil {
			t.Fatal(err)
		}
		bins[arch] = p
	}
	ex := filepath.Join(dir, "examples")
	if err := os.MkdirAll(filepath.Join(ex, "systemd"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"a.conflist": "{}", "systemd/gc.timer": "[Timer]"} {
		if err := os.WriteFile(filepath.Join(ex, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Spec{
		Repository: "example.org/cniplugins", Version: "v1.2.3", Commit: "abc", Epoch: epoch,
		Binaries: bins, Names: []string{"ipam-delegated", "ipam-da-pools"}, Examples: ex,
	}
}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	idx, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The same inputs give the same index digest; any input that differs
// (a binary's bytes, the time) gives another.
func TestBuildIsReproducible(t *testing.T) {
	s := spec(t)
	first, second := digest(t, s), digest(t, s)
	if first != second {
		t.Fatalf("two builds of one spec: %s and %s", first, second)
	}
	later := s
	later.Epoch = epoch.Add(time.Second)
	if digest(t, later) == first {
		t.Errorf("another epoch gave the same digest %s: the time is not in the image", first)
	}
	if err := os.WriteFile(s.Binaries["arm64"], []byte("another arm64 binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	if digest(t, s) == first {
		t.Errorf("another binary gave the same digest %s", first)
	}
}

// One image per architecture, each with its platform, the installer as
// entrypoint, the commit's time, and one layer: the binary, a link per
// personality, the examples, all owned by 0 with fixed modes.
func TestImageContent(t *testing.T) {
	s := spec(t)
	idx, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 || im.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("index %+v: want an OCI index of 2 images", im)
	}
	for i, want := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}} {
		d := im.Manifests[i]
		if d.Platform == nil || !d.Platform.Equals(want) {
			t.Errorf("manifest %d: platform %+v, want %+v", i, d.Platform, want)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != want.Architecture || !cf.Created.Time.Equal(epoch) ||
			!slices.Equal(cf.Config.Entrypoint, []string{"/opt/cni/bin/cniplugins"}) || !slices.Equal(cf.Config.Cmd, []string{"k8s-install"}) ||
			cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cf.Config.Labels["org.opencontainers.image.revision"] != "abc" {
			t.Errorf("%s config: %+v", want.Architecture, cf)
		}
		if layers, err := img.Layers(); err != nil || len(layers) != 1 {
			t.Fatalf("%s: %d layers (%v), want 1", want.Architecture, len(layers), err)
		}
		entries, err := Entries(img)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			h := e.Header
			if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
				t.Errorf("%s %s: owner %d:%d mtime %v", want.Architecture, h.Name, h.Uid, h.Gid, h.ModTime)
			}
			entry := h.Name + " " + strings.TrimLeft(h.FileInfo().Mode().String(), "-")
			if h.Typeflag == tar.TypeSymlink {
				entry += " -> " + h.Linkname
			}
			if h.Name == "opt/cni/bin/cniplugins" && string(e.Data) != "binary for "+want.Architecture {
				t.Errorf("%s image holds the binary %q", want.Architecture, e.Data)
			}
			got = append(got, entry)
		}
		wantEntries := []string{
			"examples/ drwxr-xr-x", "examples/a.conflist rw-r--r--", "examples/systemd/ drwxr-xr-x", "examples/systemd/gc.timer rw-r--r--",
			"opt/ drwxr-xr-x", "opt/cni/ drwxr-xr-x", "opt/cni/bin/ drwxr-xr-x", "opt/cni/bin/cniplugins rwxr-xr-x",
			"opt/cni/bin/ipam-da-pools Lrwxrwxrwx -> cniplugins", "opt/cni/bin/ipam-delegated Lrwxrwxrwx -> cniplugins",
		}
		if !slices.Equal(got, wantEntries) {
			t.Errorf("%s layer:\n%s\nwant\n%s", want.Architecture, strings.Join(got, "\n"), strings.Join(wantEntries, "\n"))
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	for name, mutate := range map[string]func(*Spec){
		"a version that is no tag":      func(s *Spec) { s.Version = "1.0/evil" },
		"a personality with a path":     func(s *Spec) { s.Names = []string{"../bin/sh"} },
		"a personality named as binary": func(s *Spec) { s.Names = []string{"cniplugins"} },
		"no binary":                     func(s *Spec) { s.Binaries = nil },
		"a missing binary":              func(s *Spec) { s.Binaries = map[string]string{"amd64": "/nonexistent"} },
	} {
		s := spec(t)
		mutate(&s)
		if _, err := Build(s); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

// The archive is an OCI layout naming the index s.Ref(), with a
// docker-archive manifest.json over the same blobs; two archives of one
// spec are the same bytes.
func TestWriteArchive(t *testing.T) {
	s := spec(t)
	idx, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.oci.tar"), filepath.Join(dir, "b.oci.tar")
	h, err := WriteArchive(idx, s, a)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := idx.Digest(); h != want {
		t.Errorf("WriteArchive returned %s, the index is %s", h, want)
	}
	if _, err := WriteArchive(idx, s, b); err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ba) != string(bb) {
		t.Errorf("two archives of one index differ")
	}
	unpacked := t.TempDir()
	f, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if !hdr.ModTime.Equal(epoch) || hdr.Uid != 0 {
			t.Errorf("%s: mtime %v uid %d", hdr.Name, hdr.ModTime, hdr.Uid)
		}
		p := filepath.Join(unpacked, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			_ = os.MkdirAll(p, 0o755)
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "oci-layout") || !slices.Contains(names, "index.json") || !slices.Contains(names, "manifest.json") {
		t.Errorf("archive entries %v: want sorted, with oci-layout, index.json and manifest.json", names)
	}
	p, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil || len(tm.Manifests) != 1 {
		t.Fatalf("index.json %+v (%v), want one descriptor", tm, err)
	}
	d := tm.Manifests[0]
	if d.Digest != h || d.Annotations["io.containerd.image.name"] != "example.org/cniplugins:v1.2.3" || d.Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Errorf("index.json names %+v", d)
	}
	var m tarball.Manifest
	raw, _ := os.ReadFile(filepath.Join(unpacked, "manifest.json"))
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 2 {
		t.Fatalf("manifest.json %s (%v)", raw, err)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		if !slices.Equal(m[i].RepoTags, []string{"example.org/cniplugins:v1.2.3-" + arch}) || len(m[i].Layers) != 1 {
			t.Errorf("manifest.json entry %d: %+v", i, m[i])
		}
		for _, blob := range append([]string{m[i].Config}, m[i].Layers...) {
			if _, err := os.Stat(filepath.Join(unpacked, blob)); err != nil {
				t.Errorf("manifest.json names %s: %v", blob, err)
			}
		}
	}
}
