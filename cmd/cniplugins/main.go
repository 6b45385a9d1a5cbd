// Command cniplugins is the lean executable behind every personality: no
// network server or client code is linked into it, because every exec of
// every personality would pay for it (see cmd/cniplugins-full). It is,
// with that one, the only place that reads os.Args or calls os.Exit.
package main

import (
	"os"

	"github.com/cniplugins/cniplugins/internal/cli"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

func main() {
	os.Exit(cli.Main(os.Args, plugin.ProcessIO(), cli.Lean()))
}
