package ctrimage

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cniplugins/cniplugins/internal/ociimage"
	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
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
	r := testbin.Run(testbin.Call{Path: filepath.Dir(binary), Plugin: filepath.Base(binary), Argv: []string{"list"}})
	if r.Exit != 0 {
		return nil, fmt.Errorf("%s list: exit %d: %s", binary, r.Exit, r.Stderr)
	}
	return strings.Fields(string(r.Stdout)), nil
}
