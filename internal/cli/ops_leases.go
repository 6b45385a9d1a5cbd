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

// writeLeases prints leases in the -o format, with NODE columns when
// they come from a store shared by nodes. Sticky columns appear once any
// address is kept for a sticky key, SECOND-OWNER once any address has a
// migration's second owner, TENANT once any counts for a quota's tenant.
func writeLeases(cmd *cobra.Command, leases []ops.Lease, out outputFlags, nodes bool) error {
	if leases == nil {
		leases = []ops.Lease{} // JSON: an empty array, never null
	}
	some := func(f func(ops.Lease) bool) bool { return slices.ContainsFunc(leases, f) }
	sticky := some(func(l ops.Lease) bool { return l.StickyKey != "" })
	return writeItems(cmd.OutOrStdout(), out, leases, append(leaseColumns(func(l ops.Lease) ops.Lease { return l }), []column[ops.Lease]{
		{"SINCE", true, func(l ops.Lease) string { return timeCell(l.Since, "") }},
		{"NODE", nodes, func(l ops.Lease) string { return l.Node }},
		{"NODE-SEEN", nodes, func(l ops.Lease) string { return timeCell(l.NodeSeen, "-") }},
		{"STICKY-KEY", sticky, func(l ops.Lease) string { return printableKey(l.StickyKey) }},
		{"LAST-OWNER", sticky, func(l ops.Lease) string { return l.LastOwner }},
		{"EXPIRES", sticky, func(l ops.Lease) string {
			if l.HoldExpires.IsZero() && l.Held() {
				return "never"
			}
			return timeCell(l.HoldExpires, "-")
		}},
		{"SECOND-OWNER", some(func(l ops.Lease) bool { return l.SecondOwner != "" }), func(l ops.Lease) string { return cmp.Or(l.SecondOwner, "-") }},
		{"TENANT", some(func(l ops.Lease) bool { return l.Tenant != "" }), func(l ops.Lease) string { return printableKey(l.Tenant) }},
	}...))
}

// leaseColumns are a reservation's first columns, in leases' table and
// gc --cri's.
func leaseColumns[T any](lease func(T) ops.Lease) []column[T] {
	return []column[T]{
		{"ADDRESS", true, func(t T) string { return lease(t).Address }},
		{"NETWORK", true, func(t T) string { return lease(t).Network }},
		{"POOL", true, func(t T) string { return lease(t).Pool }},
		{"CONTAINER", true, func(t T) string { return lease(t).ContainerID }},
		{"IFNAME", true, func(t T) string { return lease(t).IfName }},
		{"OWNER", true, func(t T) string { return lease(t).Owner }},
	}
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
