package dockeripam

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/logging"
)

// Commands are the full flavour's CLI commands from this package.
func Commands() []*cobra.Command { return []*cobra.Command{command()} }

func command() *cobra.Command {
	var socket, configFile, dataDir string
	c := &cobra.Command{
		Use:   "docker-ipam",
		Short: "Serve Docker's remote IPAM API on the same pools as the CNI plugins",
		Long: "Runs in the foreground serving Docker's IPAM plugin API v1 on a unix socket.\n" +
			"The socket's base name is the driver name: `docker network create --ipam-driver cniplugins ...`.\n" +
			"Logs go to stderr; SIGTERM or SIGINT finish in-flight requests, remove the socket and exit 0.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(configFile, dataDir)
			if err != nil {
				return err
			}
			log := logging.Daemon("docker-ipam", cmd.ErrOrStderr())
			d, err := Open(cfg, log)
			if err != nil {
				return err
			}
			defer d.Close()
			l, err := Listen(socket)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return d.Serve(ctx, l, socket)
		},
	}
	c.Flags().StringVar(&socket, "socket", DefaultSocket, "the unix socket to serve; its base name is the driver name")
	c.Flags().StringVar(&configFile, "config", "", "JSON config file (poolDefinitions, defaultAddressPools, dataDir, lockTimeout)")
	c.Flags().StringVar(&dataDir, "data-dir", "", "state directory shared with ipam-da-pools (default "+DefaultDataDir+", or the config's dataDir)")
	return c
}
