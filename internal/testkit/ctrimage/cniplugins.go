package ctrimage

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/ociimage"
	"github.com/cniplugins/cniplugins/internal/testkit"
)

// CNIPlugins builds the image repo:version of binary with the builder of
// `make image`, for this machine's architecture only, as an OCI archive
// at dir/version.oci.tar. A test binary may keep its symbol table;
// nothing else differs from the release's.
func CNIPlugins(dir, repo, version, binary string) (string, error) {
	names, err := Personalities(binary)
	if err != nil {
		return "", err
	}
	s := ociimage.Spec{
		Repository: repo, Version: version, Commit: "test", Epoch: time.Unix(0, 0),
		Binaries: map[string]string{runtime.GOARCH: binary}, Names: names,
		Examples: filepath.Join(testkit.RepoRoot(), "examples"),
	}
	idx, err := ociimage.Build(s)
	if err != nil {
		return "", err
	}
	archive := filepath.Join(dir, version+".oci.tar")
	if _, err := ociimage.WriteArchive(idx, s, archive); err != nil {
		return "", err
	}
	return archive, nil
}

// Personalities are the names binary answers to: what `cniplugins list`
// prints.
func Personalities(binary string) ([]string, error) {
	cmd := exec.Command(binary, "list")
	cmd.Args[0] = "cniplugins"
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s list: %w", binary, err)
	}
	return strings.Fields(string(out)), nil
}
