package cli

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

func (fl Flavour) leasesCmd() *cobra.Command {
	var (
		bf  backendFlags
		out outputFlags
		f   ops.LeaseFilter
	)
	c := &cobra.Command{
		Use:   "leases",
		Short: "List every reservation: address, network or pool, owner, since when",
		Long: `List every reservation under the data dir: network directories (host-local's
layout, also when upstream host-local wrote them) and pool directories. Reads
without taking any lock: reservation files appear and disappear atomically.
With --etcd (full flavour), list ipam-da-etcd's claims of every node (or of
--node) instead, with a NODE column.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := bf.outputBackend(cmd, &out)
			if err != nil {
				return err
			}
			f.Node = bf.node
			leases, err := b.Leases(f)
			if err != nil {
				return err
			}
			return writeLeases(cmd, leases, out, b.Shared())
		},
	}
	bf.add(c, fl.Etcd, false, "only this node's claims")
	out.add(c)
	c.Flags().StringVar(&f.Network, "network", "", "only this network's reservations (its directory, and its reservations in pools)")
	c.Flags().StringVar(&f.Pool, "pool", "", "only this pool's reservations")
	c.Flags().StringVar(&f.Container, "container", "", "only reservations of this container ID (or an ID starting with it)")
	return c
}

// writeLeases prints leases in the -o format, with a NODE column when
// they come from a store shared by nodes.
func writeLeases(cmd *cobra.Command, leases []ops.Lease, out outputFlags, nodes bool) error {
	if leases == nil {
		leases = []ops.Lease{} // JSON: an empty array, never null
	}
	header := []string{"ADDRESS", "NETWORK", "POOL", "CONTAINER", "IFNAME", "OWNER", "SINCE"}
	if nodes {
		header = append(header, "NODE", "NODE-SEEN")
	}
	// Sticky columns appear once any address is kept for a sticky key.
	sticky := slices.ContainsFunc(leases, func(l ops.Lease) bool { return l.StickyKey != "" })
	if sticky {
		header = append(header, "STICKY-KEY", "LAST-OWNER", "EXPIRES")
	}
	// A migration's second owner gets its column once any address has one.
	shared := slices.ContainsFunc(leases, func(l ops.Lease) bool { return l.SecondOwner != "" })
	if shared {
		header = append(header, "SECOND-OWNER")
	}
	// TENANT appears once any address counts for a quota's tenant.
	tenants := slices.ContainsFunc(leases, func(l ops.Lease) bool { return l.Tenant != "" })
	if tenants {
		header = append(header, "TENANT")
	}
	return out.write(cmd.OutOrStdout(), leases, header, func() [][]string {
		rows := make([][]string, len(leases))
		for i, l := range leases {
			rows[i] = []string{l.Address, l.Network, l.Pool, l.ContainerID, l.IfName, l.Owner, timeCell(l.Since, "")}
			if nodes {
				rows[i] = append(rows[i], l.Node, timeCell(l.NodeSeen, "-"))
			}
			if sticky {
				expires := timeCell(l.HoldExpires, "-")
				if l.HoldExpires.IsZero() && l.StickyKey != "" && l.ContainerID == "" {
					expires = "never"
				}
				rows[i] = append(rows[i], printableKey(l.StickyKey), l.LastOwner, expires)
			}
			if shared {
				rows[i] = append(rows[i], cmp.Or(l.SecondOwner, "-"))
			}
			if tenants {
				rows[i] = append(rows[i], printableKey(l.Tenant))
			}
		}
		return rows
	})
}

// timeCell is t in a table cell, or none for the zero time.
func timeCell(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.Format(time.RFC3339)
}

// printableKey is a sticky key for a table cell: keys are printable, but
// may hold spaces.
func printableKey(k string) string {
	if k == "" {
		return "-"
	}
	return strconv.Quote(k)
}
