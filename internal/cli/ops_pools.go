package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/clusteraccess"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// confFlags select configuration files: a conf dir or explicit files.
type confFlags struct {
	dir   string
	files []string
}

func (c *confFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.dir, "conf-dir", defaultConfDir, "CNI configuration directory (.conflist, .conf and .json files, as libcni reads them)")
	cmd.Flags().StringArrayVar(&c.files, "conf", nil, "a configuration file to read instead of the conf dir (repeatable)")
}

// networks loads the configured networks the CLI can read; a file or
// network that fails to parse is an error naming it.
func (c *confFlags) networks(dataDir string) ([]ops.Network, error) {
	files := c.files
	if len(files) == 0 {
		var err error
		if files, err = ops.ConfFiles(c.dir); err != nil {
			return nil, err
		}
	}
	plugins, problems := ops.LoadPlugins(files)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", problems[0])
	}
	var out []ops.Network
	for _, p := range plugins {
		n, ok, err := ops.Describe(p, dataDir)
		if err != nil {
			return nil, fmt.Errorf("%s: network %s: %w", p.File, p.Network, err)
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

func (fl Flavour) poolsCmd() *cobra.Command {
	var (
		bf   backendFlags
		out  outputFlags
		conf confFlags
	)
	c := &cobra.Command{
		Use:   "pools",
		Short: "Show how full each range set and pool of the configured networks is",
		Long: `For every network in the CNI configuration whose IPAM is ipam-da-pools, host-local,
or ipam-delegated with one of them as a delegate: each standalone range set and every
pool the configuration can select (named in ipam.pools, written in an ipam-ds-args
rule or defaultPools, or defined in ipam.poolDefinitions), with its size, used, free,
percent used, whether STATUS reports it exhausted, and its quotas' tenants.
With --etcd (full flavour), the same for the ipam-da-etcd networks, counted from
their claims in etcd.
-o prom writes the Prometheus text format for node_exporter's textfile collector.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := bf.outputBackend(cmd, &out)
			if err != nil {
				return err
			}
			us, err := bf.usages(cmd.ErrOrStderr(), b, conf, bf.local.dataDir) // "" without --data-dir
			if err != nil {
				return err
			}
			for _, u := range us {
				if u.Conflict != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s %s, %s: the networks sharing it disagree on its ranges; each definition is listed apart (see cniplugins validate)\n", u.Kind, u.Name, u.Conflict)
				}
			}
			return writePools(cmd.OutOrStdout(), us, out)
		},
	}
	bf.add(c, fl.Etcd, false, "")
	// Without --data-dir, each configuration's own ipam.dataDir.
	dd := c.Flags().Lookup("data-dir")
	dd.DefValue, dd.Usage, bf.local.dataDir = "", "read state from this data dir instead of each configuration's ipam.dataDir", ""
	out.add(c, formatProm)
	conf.add(c)
	return c
}

// usages is what pools lists and k8s-install's metrics serve: the usage
// in b of conf's networks (their state in dataDir, or with "" each
// configuration's own), with --etcd only those under --prefix, each one
// left out said on notes.
func (b *backendFlags) usages(notes io.Writer, be ops.Backend, conf confFlags, dataDir string) ([]ops.Usage, error) {
	nets, err := conf.networks(dataDir)
	if err != nil {
		return nil, err
	}
	if be.Shared() {
		nets = b.underPrefix(notes, nets)
	}
	return ops.UsagesIn(be, nets)
}

// underPrefix keeps the ipam-da-etcd networks whose keys are under
// --prefix, the keys the backend reads; each network left out is said on
// notes, since its pools would otherwise show another prefix's counts
// or none.
func (b *backendFlags) underPrefix(notes io.Writer, nets []ops.Network) []ops.Network {
	prefix := clusteraccess.Prefix(b.etcd.Prefix)
	var out []ops.Network
	for _, n := range nets {
		if n.EtcdPrefix != "" && n.EtcdPrefix != prefix {
			fmt.Fprintf(notes, "%s: network %s keeps its keys under %s, not %s: not listed (pass --prefix %s)\n", n.Conf.File, n.Conf.Network, n.EtcdPrefix, prefix, n.EtcdPrefix)
			continue
		}
		out = append(out, n)
	}
	return out
}
