package cli

import (
	"fmt"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

func releaseCmd() *cobra.Command {
	var (
		st stateFlags
		r  ops.ReleaseRequest
	)
	c := &cobra.Command{
		Use:   "release ADDRESS (--network N | --pool P)",
		Short: "Free one reservation (a leak) under the state directory's lock",
		Long: `Free one reservation, under the state directory's lock and exactly as a plugin's
DEL would: the index is updated and stays valid, so the next plugin run does not
rebuild it. Refuses when the address is not reserved, or when --container
(and --ifname) do not name its owner.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ip, err := netip.ParseAddr(args[0])
			if err != nil || ip.Zone() != "" {
				return fmt.Errorf("invalid address %q", args[0])
			}
			if (r.Network == "") == (r.Pool == "") {
				return fmt.Errorf("name exactly one of --network or --pool")
			}
			if r.IfName != "" && r.Container == "" {
				return fmt.Errorf("--ifname needs --container")
			}
			r.Addr, r.DataDir, r.LockTimeout = ip.Unmap(), st.dataDir, st.lockTimeout
			l, err := ops.Release(r)
			if err != nil {
				return err
			}
			verb := "released"
			if r.DryRun {
				verb = "would release"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", verb, l.Describe())
			return nil
		},
	}
	st.add(c, true)
	c.Flags().StringVar(&r.Network, "network", "", "the network whose state directory holds the address")
	c.Flags().StringVar(&r.Pool, "pool", "", "the pool whose state directory holds the address")
	c.Flags().StringVar(&r.Container, "container", "", "refuse unless this container ID holds the address")
	c.Flags().StringVar(&r.IfName, "ifname", "", "with --container: refuse unless this interface holds it")
	c.Flags().BoolVar(&r.DryRun, "dry-run", false, "check and print, change nothing")
	return c
}
