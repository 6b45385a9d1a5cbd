// Package integration execs the real, installed cniplugins binary the way a
// CNI runtime does, alongside small test delegates and Debian's upstream
// plugins where present.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// binDir is the CNI bin dir the tests exec from: the freshly built binary
// installed by scripts/install-symlinks.sh, plus the test delegates.
var binDir string

// verboseBin is the verbose flavour, built beside it.
var verboseBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	setup, err := testbin.Installed("cniplugins-integration-")
	if err == nil {
		defer setup.Cleanup()
		binDir = setup.BinDir
		verboseBin, err = testkit.Build(setup.Root, "verbose")
	}
	if err == nil {
		err = installDelegates(binDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func installDelegates(dir string) error {
	script := filepath.Join(testkit.RepoRoot(), "test", "integration", "testdata", "delegate.sh")
	for _, name := range []string{"test-select", "test-passcod", "test-alloc", "test-echo", "test-fail", "test-crash", "test-garbage", "test-status"} {
		if err := os.Symlink(script, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
