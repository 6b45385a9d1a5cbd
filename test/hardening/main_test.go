// Package hardening attacks the real, installed cniplugins binary: SIGKILL
// and SIGSTOP at random moments under concurrency (crash consistency),
// many concurrent workers on one shared pool (stress), hostile and
// malformed input, and a read-only or full state file system (resource
// faults). Every test execs the binary through the personality symlinks
// that scripts/install-symlinks.sh creates, as a runtime does.
package hardening

import (
	"fmt"
	"os"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// binDir is the CNI bin dir the tests exec from.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	setup, err := testbin.Installed("cniplugins-hardening-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer setup.Cleanup()
	binDir = setup.BinDir
	return m.Run()
}
