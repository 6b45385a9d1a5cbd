package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/cniplugins/cniplugins/internal/k8sinstall"
	"github.com/cniplugins/cniplugins/internal/ops"
	"github.com/cniplugins/cniplugins/internal/version"
)

// exposition is what --metrics-address serves: `pools -o prom` of the
// node's net.d, computed at each scrape by the pools command's own code
// (bf.usages: its conf dir netDir, read again each time, so a ConfigMap
// update shows at the next scrape; with --etcd, ipam-da-etcd's claims of
// the networks under --prefix, else the state of dataDir when given,
// else of each configuration's dataDir), and the installer's counters m.
func (f Flavour) exposition(log io.Writer, bf *backendFlags, b ops.Backend, netDir, dataDir string, m *k8sinstall.Metrics) *k8sinstall.Exposition {
	return &k8sinstall.Exposition{
		Usages: func(notes io.Writer) ([]ops.Usage, error) {
			return bf.usages(notes, b, confFlags{dir: netDir}, dataDir)
		},
		Metrics: m,
		Version: version.Version,
		Flavour: f.Name,
		Log:     log,
	}
}

// withMetrics runs the installer with e served on addr: the server
// first, so an address it cannot listen on fails the pod before anything
// is installed (a port taken on the host's network is the operator's to
// fix, not to be found missing from the scrape targets later), and
// stopped once the installer has returned (SIGTERM, or an install that
// failed).
func (f Flavour) withMetrics(ctx context.Context, addr string, e *k8sinstall.Exposition, o k8sinstall.Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, err := f.Metrics(ctx, addr, e.Write, o.Log)
	if err != nil {
		return fmt.Errorf("invalid --metrics-address %s: %w", addr, err)
	}
	err = k8sinstall.Run(ctx, o)
	cancel()
	<-done
	return err
}
