package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/ops"
)

// liveSandboxes is the flavour's CRI client (Flavour.CRI).
type liveSandboxes = func(endpoint string, timeout time.Duration) (map[string]bool, error)

// criFlags are gc's flags for reconciling against a CRI runtime.
type criFlags struct {
	endpoint string
	timeout  time.Duration
	minAge   time.Duration
	out      outputFlags
}

func (f *criFlags) add(c *cobra.Command, live liveSandboxes) {
	usage := "reconcile against this CRI runtime's live sandboxes (unix socket path or unix:// URL, e.g. /run/containerd/containerd.sock)"
	if live == nil {
		usage += " (full flavour only: cniplugins-full)"
	}
	c.Flags().StringVar(&f.endpoint, "cri", "", usage)
	c.Flags().DurationVar(&f.timeout, "cri-timeout", 10*time.Second, "with --cri: how long to wait for the runtime's answer")
	c.Flags().DurationVar(&f.minAge, "min-age", ops.DefaultMinAge, "with --cri: release only reservations older than this (an ADD in flight is younger)")
	f.out.add(c)
}

func (f *criFlags) run(cmd *cobra.Command, live liveSandboxes, b ops.Backend, r ops.LiveGCRequest) error {
	if live == nil {
		// The lean flavour: the CRI speaks gRPC over HTTP/2, and the lean
		// binary links no network client.
		return exitError{2, errors.New("--cri needs the full flavour: run cniplugins-full (install it with `install-symlinks.sh --flavour full`); the lean binary links no network client")}
	}
	if err := f.out.check(); err != nil {
		return err
	}
	if f.minAge < 0 {
		return fmt.Errorf("invalid --min-age %s: want 0 or more", f.minAge)
	}
	r.MinAge = f.minAge
	stale, nLive, err := reconcile(live, f.endpoint, f.timeout, b, r)
	if errors.As(err, new(exitError)) {
		return err
	}
	if werr := writeLiveGC(cmd, stale, f.out); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if !r.Apply {
		fmt.Fprintf(cmd.ErrOrStderr(), "%d live sandboxes; %d to release; nothing changed (run again with --apply)\n", nLive, len(stale))
	}
	return nil
}

// reconcile is gc --cri's work, also k8s-install's GC loop: ask the
// runtime at endpoint for its live sandboxes, then (with r.Apply) release
// every stale reservation of b. It returns the stale ones and how many
// sandboxes were live. A runtime that cannot be asked releases nothing
// (an exitError 2: never "no sandbox, so everything is stale").
func reconcile(live liveSandboxes, endpoint string, timeout time.Duration, b ops.Backend, r ops.LiveGCRequest) ([]ops.LiveGCLease, int, error) {
	sandboxes, err := live(endpoint, timeout)
	if err != nil {
		return nil, 0, exitError{2, fmt.Errorf("%w; nothing released", err)}
	}
	r.Live, r.Now = sandboxes, time.Now()
	stale, err := ops.LiveGC(b, r)
	return stale, len(sandboxes), err
}

func writeLiveGC(cmd *cobra.Command, stale []ops.LiveGCLease, out outputFlags) error {
	w := cmd.OutOrStdout()
	if out.format == ops.FormatJSON {
		return ops.WriteJSON(w, stale)
	}
	header := []string{"ADDRESS", "NETWORK", "POOL", "CONTAINER", "IFNAME", "OWNER", "AGE", "ERROR"}
	rows := make([][]string, len(stale))
	for i, l := range stale {
		rows[i] = []string{l.Address, l.Network, l.Pool, l.ContainerID, l.IfName, l.Owner, l.Age.String(), l.Error}
	}
	return ops.WriteTable(w, header, rows, out.noHeaders)
}
