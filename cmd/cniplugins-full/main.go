// Command cniplugins-full is a strict superset of cmd/cniplugins: every
// lean personality and command plus the network-facing ones, which link
// net/http (and so cost every exec about a millisecond and a megabyte
// more). Install it under the name cniplugins with
// `install-symlinks.sh --flavour full` where those are wanted.
package main

import (
	"os"

	"github.com/cniplugins/cniplugins/internal/cli"
	"github.com/cniplugins/cniplugins/internal/criclient"
	"github.com/cniplugins/cniplugins/internal/daetcd"
	"github.com/cniplugins/cniplugins/internal/dockeripam"
	"github.com/cniplugins/cniplugins/internal/metricsserver"
	"github.com/cniplugins/cniplugins/internal/plugin"
	"github.com/cniplugins/cniplugins/internal/version"
)

func main() {
	full := cli.Lean(version.FlavourFull)
	// The network-facing personalities, commands and backends, one line
	// each: full.Registry = full.Registry.With(somepkg.Personality())
	full.Registry = full.Registry.With(daetcd.Personality())
	full.Commands = cli.Join(full.Commands, dockeripam.Commands)
	full.Etcd = openEtcd               // leases, release and gc --etcd (etcd.go)
	full.CRI = criclient.LiveSandboxes // gc --cri
	full.Metrics = metricsserver.Serve // k8s-install --metrics-address
	os.Exit(cli.Main(os.Args, plugin.ProcessIO(), full))
}
