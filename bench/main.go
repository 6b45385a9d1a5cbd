// Command bench measures the shipped cniplugins binary the way a CNI
// runtime uses it (one process per operation, CNI_* environment, config
// on stdin) against Debian's upstream host-local and an exec floor, and
// writes RESULTS.md and ADD-latency.svg. Run it with `make bench`
// (BENCHFLAGS=-fill60k for the 60,000-allocation level).
//
// One file per job: build.go builds and installs the binaries, exec.go
// makes one invocation, subjects.go describes what is measured, fill.go
// pre-fills state directories, latency.go, concurrency.go, rss.go and
// inittrace.go are the scenarios, report.go, targets.go and svg.go the
// output, machine.go the machine description.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cniplugins/cniplugins/internal/testkit"
)

// options is one run's configuration. The test uses tiny values.
type options struct {
	n           int   // iterations per fill level up to 10,000
	nLarge      int   // iterations at larger fills (host-local needs ~1 s per op there)
	fills       []int // always starts with 0: the empty pool
	warmup      int   // untimed ADD+DEL per subject and fill level
	concOps     int
	concWork    int
	concRounds  int
	concOnly    []string // subject keys to burst (nil: all)
	rssRuns     int
	initRuns    int
	hostLocal   string // path of the upstream plugin
	tmpBase     string // where state directories and binaries go
	tmp         string // this run's directory under tmpBase
	flags       string // as given, for the report
	etcdOnly    bool   // only the ipam-da-etcd scenario (etcd.go)
	stickyOnly  bool   // only the sticky scenario (sticky.go)
	tenancyOnly bool   // only the tenancy scenario (tenancy.go)
	log         io.Writer
}

func (o *options) itersFor(fill int) int {
	if fill > 10000 {
		return max(1, min(o.nLarge, o.n))
	}
	return o.n
}

func (o *options) logf(format string, args ...any) {
	if o.log != nil {
		fmt.Fprintf(o.log, "bench: "+format+"\n", args...)
	}
}

// defaultN keeps a default run (fills 0, 1k, 10k) within 2–4 minutes on
// two cores: host-local's ADD+DEL at 10,000 allocations (~0.25 s per
// iteration) dominates.
const defaultN = 300

func main() {
	o := &options{fills: []int{0, 1000, 10000}, warmup: 3, concOps: 200, concWork: 32, concRounds: 5,
		rssRuns: 7, initRuns: 15, hostLocal: upstreamHostLocal, log: os.Stderr}
	flag.IntVar(&o.n, "n", defaultN, "timed iterations; each ADDs and DELs once per subject and fill level (60k: see -n60k)")
	fill60k := flag.Bool("fill60k", false, "also measure with 60,000 allocations (host-local needs about 1 s per operation there)")
	n60k := flag.Int("n60k", 0, "iterations at 60,000 allocations (default n/5, at least 10)")
	out := flag.String("out", "bench/results", "directory for RESULTS.md and ADD-latency.svg")
	flag.StringVar(&o.tmpBase, "tmp", "", "directory for state directories and binaries (default $TMPDIR); use the file system the runtime would")
	flag.StringVar(&o.hostLocal, "host-local", upstreamHostLocal, "the upstream host-local plugin to compare with")
	flag.BoolVar(&o.etcdOnly, "etcd-only", false, "run only the ipam-da-etcd scenario and print its section (RESULTS.md is not written)")
	flag.BoolVar(&o.stickyOnly, "sticky-only", false, "run only the sticky-addresses scenario and print its section (RESULTS.md is not written)")
	flag.BoolVar(&o.tenancyOnly, "tenancy-only", false, "run only the tenancy scenario (an overflow chain) and print its section (RESULTS.md is not written)")
	flag.Parse()
	o.flags = flagsString()
	if o.n < 1 {
		fatalf("-n must be at least 1")
	}
	o.nLarge = max(10, o.n/5)
	if *n60k > 0 {
		o.nLarge = *n60k
	}
	if *fill60k {
		o.fills = append(o.fills, 60000)
	}
	start := time.Now()
	r, err := runBench(o)
	if err != nil {
		fatalf("%v", err)
	}
	r.elapsed = time.Since(start)
	if o.stickyOnly {
		fmt.Print(r.sticky.markdown(r.fs.fsType))
		return
	}
	if o.tenancyOnly {
		fmt.Print(r.tenancy.markdown(r.fs.fsType))
		return
	}
	if o.etcdOnly {
		fmt.Print(r.etcd.markdown(r.machine.nproc))
		if msg := r.etcd.failure(); msg != "" {
			fatalf("%s", msg)
		}
		return
	}
	md := r.markdown()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "RESULTS.md"), []byte(md), 0o644); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "ADD-latency.svg"), []byte(r.svg()), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Print(md)
	o.logf("wrote %s and %s in %s", filepath.Join(*out, "RESULTS.md"), filepath.Join(*out, "ADD-latency.svg"),
		r.elapsed.Round(time.Second))
	if msg := r.concurrencyFailure(); msg != "" {
		fmt.Fprintln(os.Stderr, "\n*** CONCURRENCY CHECK FAILED ***\n"+msg)
		os.Exit(1)
	}
}

func flagsString() string {
	s := ""
	flag.Visit(func(f *flag.Flag) {
		if f.Name != "out" {
			s += fmt.Sprintf(" -%s=%s", f.Name, f.Value)
		}
	})
	return s
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

// runBench is the harness's core: build, install, measure everything.
func runBench(o *options) (*results, error) {
	root := testkit.RepoRoot()
	var err error
	if o.tmp, err = os.MkdirTemp(o.tmpBase, "cniplugins-bench-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(o.tmp)
	r := &results{opts: o, machine: describeMachine(root), fs: probeFS(o.tmp)}
	o.logf("building and installing into %s", o.tmp)
	if r.bins, err = build(root, o.tmp, o.hostLocal); err != nil {
		return nil, err
	}
	r.subs = subjects(r.bins)
	if o.etcdOnly {
		return r, measureEtcd(o, root, r)
	}
	if o.stickyOnly {
		return r, measureSticky(o, r)
	}
	if o.tenancyOnly {
		return r, measureTenancy(o, r)
	}
	if r.bins.hostLocal == "" {
		r.note(fmt.Sprintf("%s is not installed (apt-get install -y containernetworking-plugins): its columns say n/a and the targets relative to it cannot be evaluated.", o.hostLocal))
	}
	var active []subject
	for _, s := range r.subs {
		if s.available() {
			active = append(active, s)
		}
	}
	if r.formats, err = formats(o, active, r); err != nil {
		return nil, err
	}
	o.logf("peak RSS: %d traced ADDs per subject", o.rssRuns)
	if err := measureRSS(o, active, r); err != nil {
		return nil, err
	}
	o.logf("system calls: one ADD and one DEL per subject under strace -f -c")
	if err := measureSyscalls(o, active, r); err != nil {
		return nil, err
	}
	o.logf("start-up: %d VERSION runs per executable, with and without GODEBUG=inittrace=1", o.initRuns)
	if err := measureStartup(o, startupSubjects(r.bins), r); err != nil {
		return nil, err
	}
	// Before the latency scenario, whose pre-fills and clean-ups leave
	// the file system's journal busy for a while.
	o.logf("concurrency: %d ADDs from %d workers, %d rounds", o.concOps, o.concWork, o.concRounds)
	measureConcurrency(o, active, r)
	o.logf("latency: fills %v, n=%d (n=%d above 10,000)", o.fills, o.n, o.nLarge)
	if err := measureLatency(o, active, r.formats, r); err != nil {
		return nil, err
	}
	o.logf("sticky: ipam-da-pools with ipam.sticky off and on")
	if err := measureSticky(o, r); err != nil {
		return nil, err
	}
	o.logf("tenancy: the chain with and without an overflow chain")
	if err := measureTenancy(o, r); err != nil {
		return nil, err
	}
	o.logf("ipam-da-etcd: latency beside ipam-da-pools, and 2 hosts × 32 concurrent ADDs")
	if err := measureEtcd(o, root, r); err != nil {
		return nil, err
	}
	return r, nil
}

// formats learns how each subject writes reservations, so that the
// pre-fill is what each would have written itself. Standalone and
// host-local share host-local's format (both must be able to take over
// the other's directory); a difference is reported.
func formats(o *options, active []subject, r *results) (map[string]format, error) {
	probed := map[string]format{}
	for _, s := range active {
		if s.key == kFloor {
			continue
		}
		f, err := probeFormat(s, filepath.Join(o.tmp, "probe-"+s.key))
		if err != nil {
			return nil, err
		}
		probed[s.key] = f
	}
	hl, ok := probed[kHostLocal]
	if !ok {
		hl = hostLocalFormat
	}
	if probed[kStandalone] != hl {
		r.note(fmt.Sprintf("WARNING: ipam-da-pools standalone writes reservations as %s, host-local as %s: not a drop-in.", probed[kStandalone], hl))
	}
	r.formatNote = fmt.Sprintf("Pre-filled reservations: %s in `%s/` for ipam-da-pools and host-local (host-local's format, probed from %s), %s in `%s/` for the chain (probed from its own ADD).",
		hl, networkDir("<dataDir>"), map[bool]string{true: "the installed host-local", false: "its documentation"}[ok], probed[kChain], poolDir("<dataDir>"))
	return map[string]format{kStandalone: hl, kHostLocal: hl, kChain: probed[kChain]}, nil
}
