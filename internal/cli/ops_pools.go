package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// confFlags select configuration files: a conf dir or explicit files.
type confFlags struct {
	dir   string
	files []string
}

func (c *confFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.dir, "conf-dir", ops.DefaultConfDir, "CNI configuration directory (.conflist, .conf and .json files, as libcni reads them)")
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

func poolsCmd() *cobra.Command {
	var (
		st   stateFlags
		out  outputFlags
		conf confFlags
	)
	c := &cobra.Command{
		Use:   "pools",
		Short: "Show how full each range set and pool of the configured networks is",
		Long: `For every network in the CNI configuration whose IPAM is ipam-da-pools, host-local,
or ipam-delegated with one of them as a delegate, and every pool defined there:
size, used, free, percent used, and whether STATUS reports it exhausted.
-o prom writes the Prometheus text format for node_exporter's textfile collector.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			dataDir := ""
			if cmd.Flags().Changed("data-dir") {
				dataDir = st.dataDir
			}
			nets, err := conf.networks(dataDir)
			if err != nil {
				return err
			}
			us, err := ops.Usages(nets)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch out.format {
			case ops.FormatJSON:
				return ops.WriteJSON(w, us)
			case ops.FormatProm:
				return ops.WriteProm(w, us)
			}
			// HELD (sticky holds, part of USED) appears once anything is
			// held, OVERFLOW once a pool has a chain.
			held := slices.ContainsFunc(us, func(u ops.Usage) bool { return u.Held > 0 })
			// MIGRATING (shared by a live migration's two owners, part of
			// USED) appears once any address is.
			migrating := slices.ContainsFunc(us, func(u ops.Usage) bool { return u.Migrating > 0 })
			chained := slices.ContainsFunc(us, func(u ops.Usage) bool { return len(u.Overflow) > 0 })
			tenanted := slices.ContainsFunc(us, func(u ops.Usage) bool { return len(u.Tenants) > 0 })
			rows := make([][]string, len(us))
			for i, u := range us {
				set, exhausted := "", "no"
				if u.RangeSet != nil {
					set = strconv.Itoa(*u.RangeSet)
				}
				if u.Exhausted {
					exhausted = "yes"
				}
				rows[i] = []string{u.Kind, u.Name, set, u.Ranges, strconv.FormatUint(u.Size, 10), strconv.FormatUint(u.Used, 10),
					strconv.FormatUint(u.Free, 10), strconv.FormatFloat(u.Percent, 'f', 1, 64) + "%", ops.Bar(u.Percent), exhausted, strings.Join(u.Networks, ",")}
				if migrating {
					rows[i] = slices.Insert(rows[i], 6, strconv.FormatUint(u.Migrating, 10))
				}
				if held {
					rows[i] = slices.Insert(rows[i], 6, strconv.FormatUint(u.Held, 10))
				}
				if chained {
					rows[i] = append(rows[i], strings.Join(append([]string{u.Name}, u.Overflow...), "→"))
				}
				if tenanted {
					rows[i] = append(rows[i], tenantsCell(u.Tenants))
				}
			}
			header := []string{"KIND", "NAME", "SET", "RANGES", "SIZE", "USED", "FREE", "USED%", "USAGE", "EXHAUSTED", "NETWORKS"}
			if migrating {
				header = slices.Insert(header, 6, "MIGRATING")
			}
			if held {
				header = slices.Insert(header, 6, "HELD")
			}
			if chained {
				header = append(header, "OVERFLOW")
			}
			if tenanted {
				header = append(header, "TENANTS")
			}
			return ops.WriteTable(w, header, rows, out.noHeaders)
		},
	}
	st.dataDir = ""
	c.Flags().StringVar(&st.dataDir, "data-dir", "", "read state from this data dir instead of each configuration's ipam.dataDir")
	out.add(c, ops.FormatProm)
	conf.add(c)
	return c
}

// tenantsCell is a pool's tenants as "tenant in-use/quota" (in-use alone
// without a quota), comma-separated.
func tenantsCell(ts []ops.TenantUsage) string {
	cells := make([]string, len(ts))
	for i, t := range ts {
		cells[i] = fmt.Sprintf("%s %d", printableKey(t.Tenant), t.InUse)
		if t.Quota != nil {
			cells[i] += fmt.Sprintf("/%d", *t.Quota)
		}
	}
	return strings.Join(cells, ", ")
}
