// Package cli decides, from argv, which personality an invocation is, and
// otherwise runs the small human-facing CLI.
package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/registry"
)

// Flavour is what one build of the binary contains, one value built by
// its main and passed down: the lean cmd/cniplugins passes Lean(name);
// cmd/cniplugins-full adds the network-facing personalities, commands and
// backends to it. Composition in main, rather than registration, is what
// keeps net/http out of the lean binary: a package that no main names is
// never linked.
type Flavour struct {
	// Name is one of version's Flavour names: what `version` prints and
	// what `install --flavour` calls this binary.
	Name     string
	Registry registry.Table
	// Commands returns the flavour's extra CLI commands, built per call.
	Commands func() []*cobra.Command
	// Etcd opens the state backend of `leases`, `release` and `gc` with
	// --etcd (the data dir's, ops.Local, is every flavour's); nil in a
	// flavour without one, which refuses --etcd. A constructor here,
	// rather than a command tree of its own, keeps one set of commands
	// and one printer for both backends, and links the etcd client only
	// into the main that names it.
	Etcd func(clusteraccess.Access) (ops.Backend, error)
	// CRI lists the live pod sandboxes of a CRI runtime for `gc --cri`;
	// nil in a flavour without a gRPC client, which refuses --cri.
	CRI func(endpoint string, timeout time.Duration) (map[string]bool, error)
	// Metrics serves write's exposition over HTTP on addr until ctx is
	// done (`k8s-install --metrics-address`); done is closed once it has
	// stopped. nil in a flavour without net/http, which refuses the flag.
	Metrics func(ctx context.Context, addr string, write func(io.Writer) error, log io.Writer) (done <-chan struct{}, err error)
}

// Lean is the lean binary's content under name (version.FlavourLean, or
// FlavourVerbose for the same main linked verbose); the full flavour's
// main starts from it too, as FlavourFull.
func Lean(name string) Flavour { return Flavour{Name: name, Registry: registry.Lean()} }

// Resolution is what an argv resolves to.
type Resolution struct {
	Personality *plugin.Personality // nil: the CLI (or an unknown name)
	CLIArgs     []string            // arguments for the CLI
	Unknown     string              // a name that is neither
}

// Resolve applies, in order: the link's own name (argv[0], not its
// target); the busybox fallback `cniplugins NAME`; the CLI when called by
// the binary's own name; otherwise an unknown personality.
func (f Flavour) Resolve(argv []string) Resolution {
	if len(argv) == 0 {
		return Resolution{}
	}
	base := filepath.Base(argv[0])
	if p, ok := f.Registry.Lookup(base); ok {
		return Resolution{Personality: &p}
	}
	if len(argv) > 1 {
		if p, ok := f.Registry.Lookup(argv[1]); ok {
			return Resolution{Personality: &p}
		}
	}
	if isBinaryName(base) {
		return Resolution{CLIArgs: argv[1:]}
	}
	return Resolution{Unknown: base}
}

// Main runs one process's worth of work and returns its exit code.
func Main(argv []string, pio plugin.IO, f Flavour) int {
	t := f.Resolve(argv)
	switch {
	case t.Personality != nil:
		return plugin.Run(*t.Personality, pio)
	case t.Unknown != "":
		return f.unknown(pio.Stderr, t.Unknown)
	default:
		return f.runCLI(t.CLIArgs, pio)
	}
}

func (f Flavour) unknown(stderr io.Writer, name string) int {
	if fullOnly(name) {
		fmt.Fprintf(stderr, "cniplugins: %s lives in the full flavour, not in this binary: run it as `cniplugins-full %s`, or install that flavour with `install-symlinks.sh --flavour full` (or `cniplugins install --flavour full`)\n", name, name)
		return 1
	}
	fmt.Fprintf(stderr, "cniplugins: unknown personality %q; known personalities:\n  %s\n", name, strings.Join(f.Registry.Names(), "\n  "))
	return 1
}
