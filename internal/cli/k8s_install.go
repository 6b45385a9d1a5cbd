package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cniplugins/cniplugins/internal/k8sinstall"
	"github.com/cniplugins/cniplugins/internal/ops"
)

// The DaemonSet's mounts of the node's directories (deploy/kubernetes).
const (
	k8sBinDir = "/host/opt/cni/bin"
	k8sNetDir = "/host/etc/cni/net.d"
)

func (f Flavour) k8sInstallCmd() *cobra.Command {
	var (
		o       k8sinstall.Options
		bf      backendFlags
		cri     = criFlags{scope: criScope{dirFlag: "--net-dir", maxFlag: "--gc-max-conf-num"}}
		metrics string
	)
	c := &cobra.Command{
		Use:   "k8s-install [--conf-source DIR] [--watch] [--gc-cri SOCKET] [--metrics-address HOST:PORT]",
		Short: "The container image's entrypoint: install into the node's mounted CNI directories, optionally stay",
		Long: `Install this binary and one symlink per personality into the node's CNI bin dir
(--bin-dir, the DaemonSet's mount of /opt/cni/bin) with install's rules,
atomically: the new binary is written and synced under a temporary name, then
renamed over the old one, so a runtime running a personality meanwhile gets the
old binary or the new one, whole. With --conf-source (a mounted ConfigMap),
install each of its .conflist, .conf and .json files (hidden keys skipped;
no link followed but the kubelet's own ..data layout; regular files only) into
--net-dir under its own name: only when it differs from what is there,
atomically, after the same checks as validate and the runtime's (every plugin
type a file of --bin-dir speaking the file's cniVersion, every ipam with a
type, no quota of 0), and only over a file it installed itself (recorded in
--net-dir's .cniplugins-installed); no other file of --net-dir is touched. A
ConfigMap with any problem installs nothing; a file of --bin-dir that is not
cniplugins' is refused before anything is written.
Without --watch, exit (an init container), 1 when anything was refused. With
--watch, stay: install the ConfigMap's files again every --interval when they
change (a ConfigMap update swaps its ..data link), keep what is installed when
the ConfigMap is refused (logged once), and exit 0 on SIGTERM, leaving
everything installed.
With --gc-cri (full flavour), run gc --cri --apply against that runtime socket
after the install, and with --watch every --gc-interval: every CNI
reservation under --data-dir (or, with --etcd, among --node's claims) that no
READY sandbox owns and that is older than --gc-min-age is released, each one
logged. Only the networks the runtime serves are reconciled: the first
--gc-max-conf-num files of --net-dir by name (the node's net.d, the runtime's
conf dir, read again at every pass) and any --gc-network; other runtimes'
reservations in the same data dir (podman's, Nomad's) are left alone.
With --metrics-address (full flavour; needs --watch), serve GET /metrics
there in Prometheus' text format: pools -o prom of --net-dir's networks,
computed at each scrape, and the installer's own counters (GC passes and
releases, install passes and refusals).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := cmd.ErrOrStderr()
			var err error
			// --metrics-address needs the full flavour's HTTP server, and a
			// process that stays to be scraped: checked before anything is
			// installed.
			switch {
			case metrics == "":
			case f.Metrics == nil:
				return exitError{2, errors.New("--metrics-address needs the full flavour: run the cniplugins-full image; the lean binary links no HTTP server")}
			case !o.Watch:
				return errors.New("--metrics-address needs --watch: without it the installer exits once installed, and nothing is left to scrape")
			default:
				o.Metrics = &k8sinstall.Metrics{}
			}
			if o.Install.Binary, o.Install.Names, err = f.toInstall("", ""); err != nil {
				return err
			}
			if o.Confs.Source != "" {
				v := ops.Validator{Lookup: f.Registry.Lookup, CNIPath: []string{o.Install.Dir}}
				o.Confs.Validate = v.Data
				o.Confs.Runtime = k8sinstall.Runtime{BinDir: o.Install.Dir, Ours: o.Install.Names}
			}
			// One backend for the GC loop and the scrapes: with --etcd, one
			// client, opened by whichever needs it first.
			backend := sync.OnceValues(func() (ops.Backend, error) { return bf.backend(cmd) })
			if cri.endpoint != "" {
				// The GC loop's scope is the net.d it installs into: the
				// node's, which is the runtime's conf dir.
				cri.scope.confDirs = []string{o.Confs.NetDir}
				if o.GC, err = f.k8sGC(backend, bf.node, cri); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			o.Log = log
			if metrics == "" {
				return k8sinstall.Run(ctx, o)
			}
			b, err := backend()
			if err != nil {
				return err
			}
			dataDir := ""
			if cmd.Flags().Changed("data-dir") {
				dataDir = bf.local.dataDir
			}
			return f.withMetrics(ctx, metrics, f.exposition(log, &bf, b, o.Confs.NetDir, dataDir, o.Metrics), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Install.Dir, "bin-dir", k8sBinDir, "the node's CNI bin dir, as mounted")
	fl.StringVar(&o.Confs.Source, "conf-source", "", "a directory (the mounted ConfigMap) whose network configurations to install into --net-dir")
	fl.StringVar(&o.Confs.NetDir, "net-dir", k8sNetDir, "the node's CNI configuration directory (net.d), as mounted")
	fl.BoolVar(&o.Watch, "watch", false, "stay after installing: follow --conf-source, run the GC loop, exit on SIGTERM")
	fl.DurationVar(&o.Interval, "interval", 10*time.Second, "with --watch: how often to look for changes in --conf-source")
	fl.StringVar(&cri.endpoint, "gc-cri", "", fullOnlyUsage("reconcile the node's reservations against this CRI runtime's live sandboxes (unix socket path or unix:// URL)", f.CRI != nil))
	fl.DurationVar(&o.GCInterval, "gc-interval", time.Hour, "with --gc-cri: time between two reconciles")
	fl.DurationVar(&cri.minAge, "gc-min-age", defaultMinAge, "with --gc-cri: release only reservations older than this (an ADD in flight is younger)")
	fl.DurationVar(&cri.timeout, "gc-cri-timeout", 10*time.Second, "with --gc-cri: how long to wait for the runtime's answer")
	fl.IntVar(&cri.scope.maxConfNum, "gc-max-conf-num", defaultMaxConfNum, "with --gc-cri: how many of --net-dir's files the runtime loads, by name (containerd's max_conf_num; 0: all); only their networks are reconciled")
	fl.StringArrayVar(&cri.scope.networks, "gc-network", nil, "with --gc-cri: a network the runtime's pods are attached to beside --net-dir's (a Multus attachment's; repeatable)")
	fl.StringVar(&metrics, "metrics-address", "", fullOnlyUsage("with --watch: serve GET /metrics (Prometheus) on this HOST:PORT (port 0: any; the bound address is logged)", f.Metrics != nil))
	bf.add(c, f.Etcd, true, "this node's name, whose claims --gc-cri reconciles (required)")
	return c
}

// k8sGC is the GC loop's one pass: gc --cri --apply on the backend the
// flags choose, each release logged.
func (f Flavour) k8sGC(backend func() (ops.Backend, error), node string, cri criFlags) (func(io.Writer) (int, error), error) {
	if f.CRI == nil {
		return nil, exitError{2, errors.New("--gc-cri needs the full flavour: run the cniplugins-full image; the lean binary links no network client")}
	}
	if cri.minAge < 0 {
		return nil, fmt.Errorf("invalid --gc-min-age %s: want 0 or more", cri.minAge)
	}
	if err := ops.CheckMaxConfNum(cri.scope.maxFlag, cri.scope.maxConfNum); err != nil {
		return nil, err
	}
	b, err := backend()
	if err != nil {
		return nil, err
	}
	if b.Shared() && node == "" {
		return nil, errors.New("with --etcd, name this host's --node: only its claims are reconciled")
	}
	return func(log io.Writer) (int, error) {
		rep, live, err := cri.reconcile(f.CRI, b, ops.GCRequest{Apply: true, Node: node})
		for _, l := range rep.Stale {
			fmt.Fprintf(log, "gc: released %s, %s old, owned by no live sandbox\n", l.Describe(), l.Age)
		}
		if rep.Stale != nil {
			writeScope(log, "gc: ", rep)
			fmt.Fprintf(log, "gc: %d live sandboxes, %d reservations released\n", live, len(rep.Stale))
		}
		return len(rep.Stale), err
	}, nil
}
