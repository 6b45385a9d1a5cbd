// Command cniplugins is the one executable behind every personality. It is
// the only place that reads os.Args or calls os.Exit.
package main

import (
	"os"

	"github.com/cniplugins/cniplugins/internal/cli"
	"github.com/cniplugins/cniplugins/internal/plugin"
)

func main() {
	os.Exit(cli.Main(os.Args, plugin.IO{
		Environ: os.Environ(),
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
	}))
}
