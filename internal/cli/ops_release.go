package cli

import (
	"fmt"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

func (f Flavour) releaseCmd() *cobra.Command {
	var (
		bf backendFlags
		r  ops.ReleaseRequest
	)
	c := &cobra.Command{
		Use:   "release (ADDRESS | --sticky-key K) (--network N | --pool P)",
		Short: "Free one reservation (a leak) under the state directory's lock",
		Long: `Free one reservation, under the state directory's lock and exactly as a plugin's
DEL would: the index is updated and stays valid, so the next plugin run does not
rebuild it. Refuses when the address is not reserved, or when --container
(and --ifname) do not name its owner.
A sticky key's reservation becomes a hold, as its DEL would make it: the key
gets the address back, for the holdFor its ADD was configured with.
With --sticky-key instead of an address, free what that sticky key holds
(of --ifname only, when given) now, rather than when its hold expires:
refused while a container has the key's address (release that first).
With --etcd (full flavour), release an ipam-da-etcd claim instead (both of
its keys, in one transaction comparing the owner); --node then refuses
unless that node holds it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ip netip.Addr
			switch {
			case (len(args) == 1) == (r.Key != ""):
				return fmt.Errorf("name exactly one of ADDRESS or --sticky-key")
			case len(args) == 1:
				var err error
				ip, err = netip.ParseAddr(args[0])
				if err != nil || ip.Zone() != "" {
					return fmt.Errorf("invalid address %q", args[0])
				}
				ip = ip.Unmap()
			case r.Container != "":
				return fmt.Errorf("--sticky-key frees holds, which no container has: drop --container")
			}
			if (r.Network == "") == (r.Pool == "") {
				return fmt.Errorf("name exactly one of --network or --pool")
			}
			if r.IfName != "" && r.Container == "" && r.Key == "" {
				return fmt.Errorf("--ifname needs --container")
			}
			b, err := bf.backend(cmd)
			if err != nil {
				return err
			}
			r.Addr, r.Node = ip, bf.node
			l, err := ops.Release(b, r)
			if err != nil {
				return err
			}
			verb := "released"
			switch keyed := l.StickyKey != "" && l.ContainerID != ""; {
			case l.SecondOwner != "" && r.DryRun:
				verb = "would act on one of the migration's two owners of"
			case l.SecondOwner != "" && l.SecondOwner == l.ContainerID:
				verb = "ended the migration target's share of"
			case l.SecondOwner != "":
				verb = "handed to its migration target"
			case keyed && r.DryRun:
				verb = "would hold for its sticky key"
			case keyed:
				verb = "held for its sticky key"
			case r.DryRun:
				verb = "would release"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", verb, l.Describe())
			return nil
		},
	}
	bf.add(c, f.Etcd, true, "refuse unless this node holds the address")
	c.Flags().StringVar(&r.Network, "network", "", "the network whose state directory holds the address")
	c.Flags().StringVar(&r.Pool, "pool", "", "the pool whose state directory holds the address")
	c.Flags().StringVar(&r.Container, "container", "", "refuse unless this container ID holds the address")
	c.Flags().StringVar(&r.IfName, "ifname", "", "with --container: refuse unless this interface holds it; with --sticky-key: that interface's hold only")
	c.Flags().StringVar(&r.Key, "sticky-key", "", "free the holds of this sticky key instead of an address")
	c.Flags().BoolVar(&r.DryRun, "dry-run", false, "check and print, change nothing")
	return c
}
