// Command cniplugins is the lean executable behind every personality: no
// network server or client code is linked into it, because every exec of
// every personality would pay for it (see cmd/cniplugins-full). It is,
// with that one, the only place that reads os.Args or calls os.Exit.
//
// It is also cniplugins-verbose: the same main linked with
// -X version.Flavour=verbose, which is all that flavour changes.
package main

import (
	"os"

	"github.com/cniplugins/cniplugins/internal/cli"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/version"
)

func main() {
	os.Exit(cli.Main(os.Args, plugin.ProcessIO(), cli.Lean(version.LeanOrVerbose())))
}
