package release

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cniplugins/cniplugins/internal/ociimage"
	"github.com/cniplugins/cniplugins/internal/testkit"
)

// image is one flavour's archive: its name in dist and the binary of the
// tarball it must hold.
type image struct{ archive, binary, repository string }

func images(version string) []image {
	return []image{
		{"cniplugins-" + version + ".oci.tar", "cniplugins", "ghcr.io/cniplugins/cniplugins"},
		{"cniplugins-full-" + version + ".oci.tar", "cniplugins-full", "ghcr.io/cniplugins/cniplugins-full"},
	}
}

// untar unpacks a plain tar of files and directories into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q leaves the archive", archive, h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkImages opens each image archive of dist as an OCI layout: an index
// named <repository>:<version> of a linux/amd64 and a linux/arm64 image,
// each one layer holding, byte for byte, the binary of that architecture's
// tarball, with a link to it for every personality that binary lists.
func checkImages(t *testing.T, dist, version string) {
	top := "cniplugins-" + version
	tarballBinary := map[string][]byte{}
	for _, arch := range arches {
		for _, e := range readTarball(t, filepath.Join(dist, top+"-linux-"+arch+".tar.gz")) {
			tarballBinary[arch+"/"+strings.TrimPrefix(e.hdr.Name, top+"/")] = e.data
		}
	}
	for _, im := range images(version) {
		dir := t.TempDir()
		untar(t, filepath.Join(dist, im.archive), dir)
		p, err := layout.FromPath(dir)
		if err != nil {
			t.Fatalf("%s: not an OCI layout: %v", im.archive, err)
		}
		top, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		tm, err := top.IndexManifest()
		if err != nil || len(tm.Manifests) != 1 {
			t.Fatalf("%s index.json: %+v (%v), want one image index", im.archive, tm, err)
		}
		if got := tm.Manifests[0].Annotations["io.containerd.image.name"]; got != im.repository+":"+version {
			t.Errorf("%s is named %q, want %s:%s", im.archive, got, im.repository, version)
		}
		idx, err := top.ImageIndex(tm.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, d := range m.Manifests {
			arch := d.Platform.Architecture
			platforms = append(platforms, d.Platform.OS+"/"+arch)
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if layers, err := img.Layers(); err != nil || len(layers) != 1 {
				t.Fatalf("%s %s: %d layers (%v)", im.archive, arch, len(layers), err)
			}
			entries, err := ociimage.Entries(img)
			if err != nil {
				t.Fatal(err)
			}
			var links []string
			for _, e := range entries {
				switch h := e.Header; {
				case h.Name == "opt/cni/bin/cniplugins":
					if !bytes.Equal(e.Data, tarballBinary[arch+"/"+im.binary]) {
						t.Errorf("%s %s: /opt/cni/bin/cniplugins is not the tarball's %s", im.archive, arch, im.binary)
					}
				case h.Typeflag == tar.TypeSymlink && h.Linkname == "cniplugins":
					links = append(links, strings.TrimPrefix(h.Name, "opt/cni/bin/"))
				}
			}
			if arch == runtime.GOARCH {
				bin := filepath.Join(t.TempDir(), "cniplugins")
				if err := os.WriteFile(bin, tarballBinary[arch+"/"+im.binary], 0o755); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(bin, "list").Output()
				if err != nil {
					t.Fatal(err)
				}
				want := strings.Fields(string(out))
				slices.Sort(want)
				if !slices.Equal(links, want) {
					t.Errorf("%s %s links %v, the binary lists %v", im.archive, arch, links, want)
				}
			}
		}
		if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
			t.Errorf("%s: platforms %v", im.archive, platforms)
		}
	}
}

// `make image` builds the release's images alone: the same bytes as
// `make release` gave.
func checkMakeImage(t *testing.T, dist, version string) {
	again := filepath.Join(t.TempDir(), "images")
	if out, err := testkit.Make("image", "DIST="+again).CombinedOutput(); err != nil {
		t.Fatalf("make image DIST=%s: %v\n%s", again, err, out)
	}
	entries, err := os.ReadDir(again)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var want []string
	for _, im := range images(version) {
		want = append(want, im.archive)
		a, _ := os.ReadFile(filepath.Join(dist, im.archive))
		b, err := os.ReadFile(filepath.Join(again, im.archive))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("make image's %s differs from make release's (%v)", im.archive, err)
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("make image wrote %v, want %v", names, want)
	}
}
