package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/k8sinstall"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/version"
)

// k8sMetrics is what k8s-install's --metrics-address needs, checked
// before anything is installed: the full flavour's HTTP server, and a
// process that stays to be scraped.
func (f Flavour) k8sMetrics(watch bool) error {
	if f.Metrics == nil {
		return exitError{2, errors.New("--metrics-address needs the full flavour: run the cniplugins-full image; the lean binary links no HTTP server")}
	}
	if !watch {
		return errors.New("--metrics-address needs --watch: without it the installer exits once installed, and nothing is left to scrape")
	}
	return nil
}

// k8sExposition is what --metrics-address serves: `pools -o prom` of the
// node's net.d, computed at each scrape as the pools command computes it
// (its conf dir --net-dir, read again each time, so a ConfigMap update
// shows at the next scrape; with --etcd, ipam-da-etcd's claims, else the
// state of --data-dir when given, else of each configuration's dataDir),
// and the installer's counters m.
func (f Flavour) k8sExposition(cmd *cobra.Command, backend func() (ops.Backend, error), netDir *string, bf *backendFlags, m *k8sinstall.Metrics) (*k8sinstall.Exposition, error) {
	b, err := backend()
	if err != nil {
		return nil, err
	}
	return &k8sinstall.Exposition{
		Usages: func() ([]ops.Usage, error) {
			dataDir := ""
			if cmd.Flags().Changed("data-dir") {
				dataDir = bf.local.dataDir
			}
			conf := confFlags{dir: *netDir}
			nets, err := conf.networks(dataDir)
			if err != nil {
				return nil, err
			}
			return ops.UsagesIn(b, nets)
		},
		Metrics: m,
		Version: version.Version,
		Flavour: f.Name,
		Log:     cmd.ErrOrStderr(),
	}, nil
}

// withMetrics runs run with e served on addr: the server first, so an
// address it cannot listen on fails the pod before anything is installed
// (a port taken on the host's network is the operator's to fix, not to
// be found missing from the scrape targets later), and stopped once run
// has returned (SIGTERM, or an install that failed).
func (f Flavour) withMetrics(ctx context.Context, addr string, e *k8sinstall.Exposition, log io.Writer, run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, err := f.Metrics(ctx, addr, e.Write, log)
	if err != nil {
		return fmt.Errorf("invalid --metrics-address %s: %w", addr, err)
	}
	err = run(ctx)
	cancel()
	<-done
	return err
}
