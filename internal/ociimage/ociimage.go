// Package ociimage builds the container images of `make image`: one OCI
// image index per flavour, an image per architecture, each a single layer
// holding the static binary, one symlink per personality and the examples
// (no shell, no libc: FROM scratch). The image's entrypoint is the binary's
// k8s-install command, the DaemonSet's installer.
//
// Reproducible: every timestamp is the commit's, entries are sorted, owner
// and group are 0, modes are fixed, and gzip writes no name or time, so one
// commit gives one digest. It is a build tool's library (internal/tools/ociimage and
// the tests link it); neither binary does.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BinDir is where the image holds the binary and its links: the path a
// CNI bin dir has on a node, so the image reads like one.
const BinDir = "opt/cni/bin"

// Binary is the binary's name in the image (the installed name, whatever
// the flavour).
const Binary = "cniplugins"

// Entrypoint and Cmd of every image: the installer with no flags (see
// `cniplugins k8s-install --help`); a pod's args replace Cmd.
var (
	entrypoint = []string{"/" + BinDir + "/" + Binary}
	defaultCmd = []string{"k8s-install"}
)

// Spec is one flavour's image index.
type Spec struct {
	// Repository is the image's name without a tag, e.g.
	// ghcr.io/cniplugins/cniplugins.
	Repository string
	Version    string // the tag
	Commit     string
	// Epoch is every timestamp in the image: the commit's time.
	Epoch time.Time
	// Binaries maps GOARCH (amd64, arm64) to that architecture's static
	// binary of this flavour.
	Binaries map[string]string
	// Names are the personalities the binary answers to: one symlink each.
	Names []string
	// Examples is a directory copied to /examples; "" for none.
	Examples string
}

// tagPattern is the OCI distribution spec's tag grammar.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Ref is the image's full name: Repository:Version.
func (s Spec) Ref() string { return s.Repository + ":" + s.Version }

// Build returns the OCI image index of s: one image per architecture, in
// GOARCH order.
func Build(s Spec) (v1.ImageIndex, error) {
	if !tagPattern.MatchString(s.Version) {
		return nil, fmt.Errorf("version %q cannot be an image tag ([A-Za-z0-9_][A-Za-z0-9._-]*, at most 128 characters)", s.Version)
	}
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("image %s: no binary", s.Repository)
	}
	var examples []file
	if s.Examples != "" {
		tree, err := readTree(s.Examples, "examples/")
		if err != nil {
			return nil, err
		}
		examples = append([]file{{name: "examples/", mode: 0o755}}, tree...)
	}
	arches := make([]string, 0, len(s.Binaries))
	for a := range s.Binaries {
		arches = append(arches, a)
	}
	slices.Sort(arches)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		img, platform, err := s.image(arch, examples)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	return idx, nil
}

func (s Spec) image(arch string, examples []file) (v1.Image, *v1.Platform, error) {
	bin, err := os.ReadFile(s.Binaries[arch])
	if err != nil {
		return nil, nil, fmt.Errorf("image %s for %s: %w", s.Repository, arch, err)
	}
	layerTar, err := s.layer(bin, examples)
	if err != nil {
		return nil, nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, nil, err
	}
	created := v1.Time{Time: s.Epoch.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image", Comment: "cniplugins " + s.Version},
	})
	if err != nil {
		return nil, nil, err
	}
	platform := &v1.Platform{OS: "linux", Architecture: arch}
	if arch == "arm64" {
		platform.Variant = "v8"
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.Created, cf.OS, cf.Architecture, cf.Variant = created, platform.OS, platform.Architecture, platform.Variant
	cf.Config = v1.Config{
		Entrypoint: entrypoint,
		Cmd:        defaultCmd,
		Env:        []string{"PATH=/" + BinDir},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":    path.Base(s.Repository),
			"org.opencontainers.image.version":  s.Version,
			"org.opencontainers.image.revision": s.Commit,
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	return img, platform, err
}

// file is one entry of the layer: a directory (name ends in /), a regular
// file, or a symlink (link set).
type file struct {
	name string
	mode int64
	link string
	data []byte
}

// layer is the image's one layer, uncompressed: the bin dir with the
// binary and its links, then the examples, every parent directory listed.
func (s Spec) layer(bin []byte, examples []file) ([]byte, error) {
	files := []file{
		{name: "opt/", mode: 0o755}, {name: "opt/cni/", mode: 0o755}, {name: BinDir + "/", mode: 0o755},
		{name: BinDir + "/" + Binary, mode: 0o755, data: bin},
	}
	for _, n := range s.Names {
		if n == Binary || n == "" || path.Base(n) != n {
			return nil, fmt.Errorf("personality name %q cannot be a link beside the binary", n)
		}
		files = append(files, file{name: BinDir + "/" + n, mode: 0o777, link: Binary})
	}
	var b bytes.Buffer
	err := writeTar(&b, append(files, examples...), s.Epoch)
	return b.Bytes(), err
}

// writeTar writes files sorted by name, owner 0, mtime epoch.
func writeTar(w io.Writer, files []file, epoch time.Time) error {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch.UTC()}
		switch {
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		case strings.HasSuffix(f.name, "/"):
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// readTree reads dir's tree as entries under prefix: directories 0755,
// files 0644 (as the release tarball has them). Symlinks and other
// special files are refused: an example or a blob is a plain file.
func readTree(dir, prefix string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		name := prefix + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			files = append(files, file{name: name + "/", mode: 0o755})
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files = append(files, file{name: name, mode: 0o644, data: data})
		default:
			return fmt.Errorf("%s is not a regular file or directory", p)
		}
		return nil
	})
	return files, err
}

// Entry is one entry of an image's layer.
type Entry struct {
	Header *tar.Header
	Data   []byte
}

// Entries lists what img's layers hold, in order: what the checks of an
// image read.
func Entries(img v1.Image) ([]Entry, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				rc.Close()
				return nil, err
			}
			out = append(out, Entry{h, data})
		}
		if err := rc.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
