package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/alloc"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// liveSandboxes is the flavour's CRI client (Flavour.CRI).
type liveSandboxes = func(endpoint string, timeout time.Duration) (map[string]bool, error)

// defaultConfDir is where runtimes read CNI network configurations.
const defaultConfDir = "/etc/cni/net.d"

// defaultMaxConfNum is how many network configurations a CRI runtime loads
// from its conf dir unless told otherwise: containerd's max_conf_num
// default, and CRI-O's one default network.
const defaultMaxConfNum = 1

// defaultMinAge is how old a reservation must be before `gc --cri` may
// release it: longer than any ADD in flight, whose sandbox the runtime
// does not list as ready until the ADD has returned.
const defaultMinAge = 10 * time.Minute

// criFlags are the flags of a reconcile against a CRI runtime: gc
// --cri's, and k8s-install's --gc-* ones (without -o).
type criFlags struct {
	endpoint string
	timeout  time.Duration
	minAge   time.Duration
	scope    criScope
	out      outputFlags
}

// criScope says which networks a runtime's list of live sandboxes speaks
// for: the networks it loads from its CNI conf dirs, plus any named
// outright (a Multus attachment's network, which no conf dir lists, or
// CRI-O's cni_default_network). Its flags name themselves in errors:
// gc --cri's, or the GC loop's --gc-* ones.
type criScope struct {
	confDirs   []string
	maxConfNum int
	networks   []string
	// flag names, for errors: "--cni-conf-dir" and "--cni-max-conf-num"
	// in gc, the installer's own in k8s-install.
	dirFlag, maxFlag string
}

// resolve reads the conf dirs now: a ConfigMap update or an operator's
// edit between two passes of the GC loop changes what the runtime serves,
// and the next pass must follow it.
func (s criScope) resolve() ([]string, error) {
	if err := ops.CheckMaxConfNum(s.maxFlag, s.maxConfNum); err != nil {
		return nil, err
	}
	var names []string
	for _, dir := range s.confDirs {
		if dir == "" {
			continue // --cni-conf-dir "": read none, name the networks outright
		}
		ns, err := ops.RuntimeNetworks(dir, s.maxConfNum)
		if err != nil {
			return nil, fmt.Errorf("invalid %s %s: cannot tell which networks the runtime serves: %w; nothing released (name the runtime's conf dir, or its networks with --network)", s.dirFlag, dir, err)
		}
		names = append(names, ns...)
	}
	for _, n := range s.networks {
		if n == "" {
			return nil, errors.New(`invalid --network "": want a network's name`)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no network to reconcile: give the runtime's conf dir (%s) or its networks (--network)", s.dirFlag)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func (f *criFlags) add(c *cobra.Command, live liveSandboxes) {
	c.Flags().StringVar(&f.endpoint, "cri", "", fullOnlyUsage("reconcile against this CRI runtime's live sandboxes (unix socket path or unix:// URL, e.g. /run/containerd/containerd.sock)", live != nil))
	c.Flags().DurationVar(&f.timeout, "cri-timeout", 10*time.Second, "with --cri: how long to wait for the runtime's answer")
	c.Flags().DurationVar(&f.minAge, "min-age", defaultMinAge, "with --cri: release only reservations older than this (an ADD in flight is younger)")
	c.Flags().StringArrayVar(&f.scope.confDirs, "cni-conf-dir", []string{defaultConfDir}, `with --cri: the runtime's CNI conf dir (repeatable; "" reads none): only the networks it loads from there are reconciled`)
	c.Flags().IntVar(&f.scope.maxConfNum, "cni-max-conf-num", defaultMaxConfNum, "with --cri: how many of the conf dir's files the runtime loads, by name (containerd's max_conf_num; 0: all)")
	f.scope.dirFlag, f.scope.maxFlag = "--cni-conf-dir", "--cni-max-conf-num"
	f.out.add(c)
}

func (f *criFlags) run(cmd *cobra.Command, live liveSandboxes, b ops.Backend, r ops.GCRequest) error {
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
	rep, nLive, err := f.reconcile(live, b, r)
	if rep.Stale == nil {
		// Nothing was looked at: the scope or the runtime failed first.
		return err
	}
	if werr := writeLiveGC(cmd, rep.Stale, f.out); err == nil {
		err = werr
	}
	writeScope(cmd.ErrOrStderr(), "", rep)
	if err != nil {
		return err
	}
	if !r.Apply {
		fmt.Fprintf(cmd.ErrOrStderr(), "%d live sandboxes; %d to release; nothing changed (run again with --apply)\n", nLive, len(rep.Stale))
	}
	return nil
}

// scopedReport is a reconcile's report with the networks it covered.
type scopedReport struct {
	ops.LiveGCReport
	Networks []string
}

// writeScope says which networks a reconcile covered and which
// reservations it left alone as another network's, one line.
func writeScope(w io.Writer, prefix string, rep scopedReport) {
	line := prefix + "networks covered: " + strings.Join(rep.Networks, ", ")
	if len(rep.Skipped) > 0 {
		var parts []string
		total := 0
		for _, n := range slices.Sorted(maps.Keys(rep.Skipped)) {
			total += rep.Skipped[n]
			name := n
			if n == "" {
				name = "(network not recorded)"
			}
			parts = append(parts, fmt.Sprintf("%s %d", name, rep.Skipped[n]))
		}
		line += fmt.Sprintf("; left alone %d reservations of other networks (%s)", total, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, line)
}

// reconcile is gc --cri's work, also k8s-install's GC loop: find the
// networks the runtime serves (f.scope), ask the runtime at f.endpoint
// for its live sandboxes, then (with r.Apply) release every reservation
// of those networks in b older than f.minAge that none owns. It returns the report and how many sandboxes were
// live; the report's Stale is nil when nothing was looked at. A scope that
// cannot be told releases nothing (exit 1, naming the flag); nor does a
// runtime that cannot be asked (an exitError 2: never "no sandbox, so
// everything is stale").
func (f *criFlags) reconcile(live liveSandboxes, b ops.Backend, r ops.GCRequest) (scopedReport, int, error) {
	networks, err := f.scope.resolve()
	if err != nil {
		return scopedReport{}, 0, err
	}
	sandboxes, err := live(f.endpoint, f.timeout)
	if err != nil {
		return scopedReport{}, 0, exitError{2, fmt.Errorf("%w; nothing released", err)}
	}
	r.Runtime = &alloc.Runtime{Ready: sandboxes, Now: time.Now(), Networks: networks, MinAge: f.minAge}
	rep, err := ops.LiveGC(b, r)
	return scopedReport{LiveGCReport: rep, Networks: networks}, len(sandboxes), err
}

func writeLiveGC(cmd *cobra.Command, stale []ops.LiveGCLease, out outputFlags) error {
	return writeItems(cmd.OutOrStdout(), out, stale, append(leaseColumns(func(l ops.LiveGCLease) ops.Lease { return l.Lease }),
		column[ops.LiveGCLease]{"AGE", true, func(l ops.LiveGCLease) string { return l.Age.String() }},
	))
}
