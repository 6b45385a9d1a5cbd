package docker

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cniplugins/cniplugins/internal/ociimage"
	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// `docker load` takes the archive `make image` writes (dockerd 20.10
// reads its manifest.json, naming each architecture's image
// <name>:<version>-<arch>), and the image runs: with no arguments its
// entrypoint is the installer, which fills the mounted bin dir.
func TestDockerLoadsTheImage(t *testing.T) {
	needDocker(t)
	bin := filepath.Join(binDir, "cniplugins")
	r := testbin.Run(testbin.Call{Path: binDir, Plugin: "cniplugins", Argv: []string{"list"}})
	names := strings.Fields(string(r.Stdout))
	if r.Exit != 0 || len(names) == 0 {
		t.Fatalf("cniplugins list: exit %d: %s", r.Exit, r.Stderr)
	}
	s := ociimage.Spec{
		Repository: "cnpd.test/cniplugins-full", Version: "test", Commit: "test", Epoch: time.Unix(0, 0),
		Binaries: map[string]string{runtime.GOARCH: bin}, Names: names,
	}
	idx, err := ociimage.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "cniplugins-full-test.oci.tar")
	if _, err := ociimage.WriteArchive(idx, s, archive); err != nil {
		t.Fatal(err)
	}
	ref := s.Ref() + "-" + runtime.GOARCH
	out, err := daemon.Run("load", "-i", archive)
	if err != nil || !strings.Contains(out, "Loaded image: "+ref) {
		t.Fatalf("docker load: %q (%v), want it to load %s", out, err, ref)
	}
	t.Cleanup(func() { _, _ = daemon.Run("rmi", "-f", ref) })

	nodeBin := t.TempDir()
	if out, err := daemon.Run("run", "--rm", "--network", "none", "-v", nodeBin+":/host/opt/cni/bin", ref); err != nil {
		t.Fatalf("docker run %s: %v\n%s", ref, err, out)
	}
	want := append([]string{"cniplugins"}, names...)
	slices.Sort(want)
	if got := testkit.DirNames(t, nodeBin); !slices.Equal(got, want) {
		t.Errorf("the container installed %v, want %v", got, want)
	}
	a, _ := os.ReadFile(bin)
	b, err := os.ReadFile(filepath.Join(nodeBin, "cniplugins"))
	if err != nil || string(a) != string(b) {
		t.Errorf("the installed binary is not the image's (%v)", err)
	}
}
