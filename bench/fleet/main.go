// Command fleet runs ipam-da-etcd as a fleet: many simulated hosts (each
// its own node name and machine ID, each ADD and DEL its own process, as a
// runtime execs them) churning against a 3-member etcd cluster on
// loopback, at a steady number of live attachments per host. It samples
// the keys under the prefix and etcd's database size, checks that no
// address is ever held twice and that nothing leaks, kills one host in
// the middle of the churn and clears it with docs/etcd.md's procedure for
// a node gone for good, and optionally kills and restarts an etcd member.
// It writes a markdown report and an SVG plot (`make bench-fleet`).
//
// The churn runs in two phases separated by a drain (every live
// attachment DELeted): the keys after the first phase and after the
// second, which lets three times as many attachments come and go, must be
// the same bounded count.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
	"github.com/cniplugins/cniplugins/internal/testkit/etcdtest"
)

type options struct {
	hosts, workers, live int
	churn                time.Duration
	sample               time.Duration
	killMember           bool
	name, out            string
	compareWith          string // a CNI bin dir of another build (main's): ADD/DEL latency side by side
	compareN             int
}

func main() {
	o := &options{}
	flag.IntVar(&o.hosts, "hosts", 64, "simulated hosts (node names)")
	flag.IntVar(&o.workers, "workers", 3, "concurrent workers per host")
	flag.IntVar(&o.live, "live", 4, "live attachments per worker: each ADD beyond it DELs the oldest")
	flag.DurationVar(&o.churn, "time", 3*time.Minute, "churn time in all (a quarter before the first drain, the rest after)")
	flag.DurationVar(&o.sample, "sample", 5*time.Second, "how often keys and database size are sampled")
	flag.BoolVar(&o.killMember, "kill-member", false, "SIGKILL one etcd member at a third of the second phase, restart it at two thirds")
	flag.StringVar(&o.name, "name", "FLEET", "report name: NAME.md and NAME.svg in -out")
	flag.StringVar(&o.out, "out", "bench/results", "directory for the report")
	flag.StringVar(&o.compareWith, "compare-with", "", "CNI bin dir of another cniplugins-full build: also measure one host's ADD and DEL, both builds alternating")
	flag.IntVar(&o.compareN, "compare-n", 200, "iterations of the side-by-side measurement")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fleet: "+format+"\n", args...)
}

func run(o *options) error {
	if err := etcdtest.Available(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cniplugins-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logf("building cniplugins-full")
	bin, err := testkit.Build(filepath.Join(tmp, "build"), "full")
	if err != nil {
		return err
	}
	binDir := filepath.Join(tmp, "cni-bin")
	if err := testkit.Install(bin, binDir); err != nil {
		return err
	}
	logf("starting a 3-member etcd cluster")
	cl, err := etcdtest.Start(etcdtest.Options{Dir: filepath.Join(tmp, "etcd")})
	if err != nil {
		return err
	}
	defer cl.Stop()
	f := newFleet(o, cl, binDir, tmp)
	rep, err := f.run()
	if err != nil {
		return err
	}
	if o.compareWith != "" {
		logf("side by side with %s, n=%d", o.compareWith, o.compareN)
		if rep.compare, err = compare(cl, binDir, o.compareWith, tmp, o.compareN); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, o.name+".svg"), []byte(rep.svg()), 0o644); err != nil {
		return err
	}
	md := rep.markdown(o)
	fmt.Print(md)
	if !rep.ok() {
		_ = os.WriteFile(filepath.Join(o.out, o.name+".md"), []byte(md), 0o644)
		return fmt.Errorf("invariants failed: see the report")
	}
	return os.WriteFile(filepath.Join(o.out, o.name+".md"), []byte(md), 0o644)
}

// osArgs is the command line after the program name, for the report.
func osArgs() []string { return os.Args[1:] }
