// Package cli decides, from argv, which personality an invocation is, and
// otherwise runs the small human-facing CLI.
package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/registry"
)

// binaryNames are the names the binary itself is installed under.
func isBinaryName(name string) bool {
	return name == "cniplugins" || name == "cniplugins-verbose"
}

// Target is what an argv resolves to.
type Target struct {
	Personality *plugin.Personality // nil: the CLI (or an unknown name)
	CLIArgs     []string            // arguments for the CLI
	Unknown     string              // a name that is neither
}

// Resolve applies, in order: the link's own name (argv[0], not its
// target); the busybox fallback `cniplugins NAME`; the CLI when called by
// the binary's own name; otherwise an unknown personality.
func Resolve(argv []string) Target {
	if len(argv) == 0 {
		return Target{CLIArgs: nil}
	}
	base := filepath.Base(argv[0])
	if p, ok := registry.Lookup(base); ok {
		return Target{Personality: &p}
	}
	if len(argv) > 1 {
		if p, ok := registry.Lookup(argv[1]); ok {
			return Target{Personality: &p}
		}
	}
	if isBinaryName(base) {
		return Target{CLIArgs: argv[1:]}
	}
	return Target{Unknown: base}
}

// Main runs one process's worth of work and returns its exit code.
func Main(argv []string, pio plugin.IO) int {
	t := Resolve(argv)
	switch {
	case t.Personality != nil:
		return plugin.Run(*t.Personality, pio)
	case t.Unknown != "":
		return unknown(pio.Stderr, t.Unknown)
	default:
		return runCLI(t.CLIArgs, pio)
	}
}

func unknown(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "cniplugins: unknown personality %q; known personalities:\n  %s\n", name, strings.Join(registry.Names(), "\n  "))
	return 1
}
