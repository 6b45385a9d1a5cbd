package integration

import (
	"path/filepath"
	"testing"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// Every shipped example validates, all of them at once: an operator may
// install several into one conf dir, and `validate` then also checks that
// no two of them define one pool differently.
func TestExamplesValidateTogether(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.RepoRoot(), "examples", "*.conflist"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example conflists: %v", err)
	}
	args := append([]string{"validate", "--cni-path", binDir + ":/usr/lib/cni"}, files...)
	if r := cliRun(args...); r.Exit != 0 {
		t.Fatalf("validate examples: exit %d\nstdout: %s\nstderr: %s", r.Exit, r.Stdout, r.Stderr)
	}
}
