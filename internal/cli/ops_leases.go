package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

func leasesCmd() *cobra.Command {
	var (
		st  stateFlags
		out outputFlags
		f   ops.LeaseFilter
	)
	c := &cobra.Command{
		Use:   "leases",
		Short: "List every reservation: address, network or pool, owner, since when",
		Long: `List every reservation under the data dir: network directories (host-local's
layout, also when upstream host-local wrote them) and pool directories. Reads
without taking any lock: reservation files appear and disappear atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			leases, err := ops.Leases(st.dataDir, f)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out.format == ops.FormatJSON {
				return ops.WriteJSON(w, leases)
			}
			rows := make([][]string, len(leases))
			for i, l := range leases {
				since := ""
				if !l.Since.IsZero() {
					since = l.Since.Format(time.RFC3339)
				}
				rows[i] = []string{l.Address, l.Network, l.Pool, l.ContainerID, l.IfName, l.Owner, since}
			}
			return ops.WriteTable(w, []string{"ADDRESS", "NETWORK", "POOL", "CONTAINER", "IFNAME", "OWNER", "SINCE"}, rows, out.noHeaders)
		},
	}
	st.add(c, false)
	out.add(c)
	c.Flags().StringVar(&f.Network, "network", "", "only this network's reservations (its directory, and its reservations in pools)")
	c.Flags().StringVar(&f.Pool, "pool", "", "only this pool's reservations")
	c.Flags().StringVar(&f.Container, "container", "", "only reservations of this container ID (or an ID starting with it)")
	return c
}
