// Package e2e drives the real, installed cniplugins binary the way a
// container runtime does: through containernetworking/cni's libcni, with
// the example conflists from examples/, Debian's upstream bridge and
// loopback plugins, a network namespace and a bridge per test. Every test
// checks what a user would: the address is on the interface inside the
// namespace, the gateway answers a ping, the reservation is on disk while
// the attachment lives and gone after DEL, GC or a failed ADD.
//
// The tests need root and `ip netns`; without them they skip loudly. The
// upstream plugins come from Debian's containernetworking-plugins package,
// which scripts/test-deps.sh (run by `make test`) installs.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit/testbin"
)

// upstreamDir is where Debian installs the reference CNI plugins.
const upstreamDir = "/usr/lib/cni"

// failDelegate is the name of a test IPAM delegate that fails every ADD
// with code 101 and succeeds (printing nothing) on any other command.
const failDelegate = "e2e-fail"

var (
	// installDir is the CNI bin dir scripts/install-symlinks.sh installed
	// the freshly built binary into, plus the failing test delegate.
	installDir string
	// binDirs is what libcni searches, in order: ours, then upstream's.
	binDirs []string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	setup, err := testbin.Installed("cniplugins-e2e-")
	if err == nil {
		defer setup.Cleanup()
		installDir = setup.BinDir
		err = os.WriteFile(filepath.Join(installDir, failDelegate), []byte(failScript), 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDirs = []string{installDir, upstreamDir}
	return m.Run()
}

const failScript = `#!/bin/sh
# e2e-fail: an IPAM delegate that refuses every ADD.
cat >/dev/null
if [ "$CNI_COMMAND" = ADD ]; then
	echo '{"cniVersion":"1.0.0","code":101,"msg":"nope"}'
	exit 1
fi
exit 0
`
